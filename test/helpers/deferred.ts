/** A promise and the function that settles it, for a test to hold one step until another has happened. */
export function deferred() {
  let resolve!: () => void
  const promise = new Promise<void>((settle) => {
    resolve = settle
  })
  return { promise, resolve }
}
