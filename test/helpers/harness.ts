/**
 * Every helper the suites share, gathered from the file of its concern (database.ts, config.ts, context.ts,
 * http.ts, factories.ts, eventually.ts, receiver.ts), so that a suite needs one import.
 */
export * from './config.ts'
export * from './context.ts'
export * from './database.ts'
export * from './events.ts'
export * from './eventually.ts'
export * from './factories.ts'
export * from './http.ts'
export * from './receiver.ts'
