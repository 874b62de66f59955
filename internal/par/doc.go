// Package par runs deterministic fork-join sections: a set of independent
// jobs over index ranges, spread over the calling goroutine and a pool of
// worker goroutines, behind one barrier.
//
// A [Job] is work over a range [lo, hi) of independent items: rows of a
// matrix, (sequence, head) pairs, columns of a sum. A [Section] holds up
// to a few jobs with their item counts and their cost per item; [Section.Run]
// cuts each job into pieces of about equal cost, lays the pieces end to end
// as the section's units, and lets the participants claim them. [For] is a
// section of one job. A [Chain] runs several row-wise jobs one after the
// other over the same range, so a chunk of rows goes through all of them
// while it is in one core's cache.
//
// # Why no split moves a bit
//
// The package only ever decides which goroutine runs which items, and
// when; it never splits an item. Every item's outputs belong to that item
// alone, and every job computes an item's outputs in the same order
// whatever range the item arrives in (the jobs' contract, which the
// kernels guarantee: each output has one fixed summation order). So the
// bits of every output are those of a serial run, at any GOMAXPROCS and
// whoever ran which chunk: a section that finds the pool busy (another
// goroutine's section, or a section started from inside a job) simply
// runs serially, with the same result.
//
// The one construct that shares a sum between two jobs, [Halves], keeps
// that rule too: its second job continues each item's chain from exactly
// where the first left it, after the first has finished that item.
//
// # How a section is run
//
// The units are split into one contiguous region per participant; each
// participant claims its own region's chunks first, then helps the others
// (work stealing), so a core slowed down by a neighbour simply claims
// fewer. Because the layout of a section's units follows the order its jobs
// were added and the regions are even, a core tends to work on the same
// rows section after section, and what one section wrote is still in the
// cache of the core the next one reads it on. A region's chunks shrink,
// from about 2/4 of the region down to a sliver, so that the participants
// reach the barrier within a small chunk of each other. Workers poll
// briefly for the next section before they park: the sections of a
// training step follow each other within microseconds.
//
// A panic in a job on a worker is recovered there and raised again on the
// section's caller once every participant is done, with the worker's
// stack; the pool stays usable.
//
// The package imports nothing of the module and knows nothing of models
// or layers: only jobs, item counts and costs.
package par
