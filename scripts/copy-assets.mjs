// The files the compiled program reads at run time beside its modules: the hosted page's stylesheet and script.
import { cpSync } from 'node:fs'

cpSync('src/modules/checkout/assets', 'dist/modules/checkout/assets', { recursive: true })
