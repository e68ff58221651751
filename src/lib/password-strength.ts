import { ZxcvbnFactory } from '@zxcvbn-ts/core'
import * as common from '@zxcvbn-ts/language-common'
import * as en from '@zxcvbn-ts/language-en'

/**
 * The least zxcvbn score a new password must reach: 3 ("safely unguessable: moderate protection from an
 * offline slow-hash scenario"). NIST SP 800-63B asks that a new password be checked against passwords known to
 * be common, and refused when it is repetitive or sequential; zxcvbn's dictionaries (the 30,000 most common
 * passwords, common words and names) and its pattern matchers (repeats, sequences, keyboard walks, dates, l33t)
 * do both, and its feedback says why.
 */
export const MIN_PASSWORD_SCORE = 3

let estimator: ZxcvbnFactory | null = null

// Built at the first use: its dictionaries take tens of milliseconds to load, which no other command needs.
function zxcvbn(): ZxcvbnFactory {
  estimator ??= new ZxcvbnFactory({
    dictionary: { ...common.dictionary, ...en.dictionary },
    graphs: common.adjacencyGraphs,
    translations: en.translations,
  })
  return estimator
}

/** Why `password` is too easy to guess, in words to show the person choosing it, or null when it is not. */
export function passwordWeakness(password: string): string | null {
  const result = zxcvbn().check(password)
  if (result.score >= MIN_PASSWORD_SCORE) return null
  const why = result.feedback.warning ?? 'This password is too easy to guess.'
  const hint = result.feedback.suggestions[0]
  return hint ? `${why} ${hint}` : why
}
