// The files the compiled program reads at run time beside its modules: the hosted page's stylesheets and script.
import { cpSync } from 'node:fs'

cpSync('src/modules/checkout/assets', 'dist/modules/checkout/assets', { recursive: true })
cpSync('src/http/assets', 'dist/http/assets', { recursive: true })
