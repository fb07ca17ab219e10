// Package docs holds attestd's documentation: the pages under docs/, one
// per reader, which the README at the repository's root links to. It has
// no code. Its tests keep the README a front page of at most 200 lines
// whose "Try it" block runs as pasted against `attestd local` (make run),
// and every relative link in the README, deploy/README.md and these pages
// pointing at a file, and at a heading when it names one.
package docs
