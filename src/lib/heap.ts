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

/**
 * V8's old generation may grow by half of what survived the last full collection before the next one, instead
 * of by a factor V8 picks (up to about 2 for a heap this size) from how fast it collects. Under the create load
 * about 4 MB a second survives two young collections (requests in flight) and dies soon after. Without this
 * flag the peak RSS of six runs was 159-219 MiB; with 50 % three runs peaked at 158-162 MiB (a full collection
 * every ~5.5 s, the old generation at about 80 MB before it), with 25 % four at 146-152 MiB but with twice the
 * full collections, whose pauses (4-9 ms) pushed the create's p99 up to 1.55 x the floor's (bench/README.md,
 * "API", 2026-11-28). Set at run time, this overrides the same flag given on the command line.
 */
setFlagsFromString('--heap-growing-percent=50')
