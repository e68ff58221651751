import { setFlagsFromString } from 'node:v8'

/**
 * V8's allocation-site pretenuring, turned off for the server process before any of its code runs (main.ts
 * imports this module first).
 *
 * When many objects made at one place in the code survive a young-generation collection, V8 starts making
 * that place's objects directly in the old generation. A long CSV export writes millions of short-lived
 * pieces through the same few places (the stream's chunks, the socket's write requests); on some starts V8
 * marks those places early, and then every chunk the export writes lands in the old generation and stays
 * there until a major collection: the server's RSS grew by up to 87 MiB over a million rows on such starts,
 * and by under 45 MiB on the others. Without pretenuring, those objects die young where they are cheap to
 * collect (bench/README.md, "CSV export", gives the figures on and off).
 */
setFlagsFromString('--no-allocation-site-pretenuring')
