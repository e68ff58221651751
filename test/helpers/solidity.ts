import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import solc from 'solc'
import type { Abi, Hex } from 'viem'
import { ROOT } from './program.ts'

/**
 * The contracts under contracts/, compiled from source at test time with the solc package (its WebAssembly build,
 * nothing downloaded) and OpenZeppelin's sources from node_modules: no compiled artifact is kept in the
 * repository. The compiler version (the package, and each file's pragma), the EVM version and the optimizer are
 * pinned, so the same sources give the same bytecode on every machine.
 */

const CONTRACTS_DIR = path.join(ROOT, 'contracts')
const SOLC_VERSION = '0.8.30'

/**
 * Cancun: what every EVM chain we may pay out on runs. Pinned rather than solc's default, which moves with each
 * release, so the bytecode does not change under the tests.
 */
const SETTINGS = {
  evmVersion: 'cancun',
  optimizer: { enabled: true, runs: 200 },
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
}

/** The only imports a contract may have beside its own directory: OpenZeppelin's, from node_modules. */
const LIBRARY_PREFIX = '@openzeppelin/contracts/'

export interface CompiledContract {
  abi: Abi
  bytecode: Hex
}

interface SolcOutput {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string }[]
  contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>
}

const require = createRequire(import.meta.url)

/** solc's import callback: OpenZeppelin's files, nothing else (and never the network). */
function readImport(importPath: string): { contents: string } | { error: string } {
  if (!importPath.startsWith(LIBRARY_PREFIX) || importPath.includes('..'))
    return { error: `import ${importPath} is not allowed: only ${LIBRARY_PREFIX}…` }
  try {
    return { contents: readFileSync(require.resolve(importPath), 'utf8') }
  } catch (error) {
    return { error: `cannot read ${importPath}: ${(error as Error).message}` }
  }
}

function compileAll(): Map<string, CompiledContract> {
  const version = solc.version() as string
  if (!version.startsWith(`${SOLC_VERSION}+`)) throw new Error(`solc ${version}, expected ${SOLC_VERSION}`)
  const sources: Record<string, { content: string }> = {}
  for (const file of readdirSync(CONTRACTS_DIR).filter((name) => name.endsWith('.sol')))
    sources[file] = { content: readFileSync(path.join(CONTRACTS_DIR, file), 'utf8') }
  const input = { language: 'Solidity', sources, settings: SETTINGS }
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: readImport })) as SolcOutput
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error')
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`)
  const compiled = new Map<string, CompiledContract>()
  for (const file of Object.keys(sources))
    for (const [name, contract] of Object.entries(output.contracts?.[file] ?? {}))
      compiled.set(name, { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` })
  return compiled
}

/** Compiled once per test process (about 1.5 s), then kept in memory. */
let cache: Map<string, CompiledContract> | undefined

/** The ABI and creation bytecode of the contract `name` of contracts/ (e.g. `TestUSDT`). */
export function compiledContract(name: string): CompiledContract {
  cache ??= compileAll()
  const contract = cache.get(name)
  if (!contract) throw new Error(`no contract ${name} in contracts/`)
  return contract
}
