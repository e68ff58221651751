import { readFileSync } from 'node:fs'
import { InvalidArgumentError } from 'commander'

/**
 * A secret named on the command line by where to read it, never by its value (which would stay in the shell's
 * history and in the process list): `env:VARIABLE` or `file:PATH` (one line; a trailing newline is dropped).
 */
export function readSecretSource(source: string, env: NodeJS.ProcessEnv = process.env): string {
  if (source.startsWith('env:')) {
    const value = env[source.slice(4)]
    if (value === undefined || value === '')
      throw new InvalidArgumentError(`the environment variable ${source.slice(4)} is not set`)
    return value
  }
  if (source.startsWith('file:')) {
    try {
      return readFileSync(source.slice(5), 'utf8').replace(/\r?\n$/, '')
    } catch (error) {
      throw new InvalidArgumentError(`cannot read ${source.slice(5)}: ${(error as Error).message}`)
    }
  }
  throw new InvalidArgumentError('a secret is given as env:VARIABLE or file:PATH, never as its value')
}

/** A repeatable `name=value` option's parser (commander's `argParser`): the values so far, with this one. */
export const namedValues =
  (what: string) =>
  (value: string, previous: Record<string, string>): Record<string, string> => {
    const eq = value.indexOf('=')
    if (eq < 1) throw new InvalidArgumentError(`a ${what} is name=value`)
    return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) }
  }
