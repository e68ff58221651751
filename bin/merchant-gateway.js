#!/usr/bin/env node
// The command-line program: runs the TypeScript sources through tsx's loader.
import { register } from 'tsx/esm/api'

register()
await import('../src/main.ts')
