// Package docs holds attestd's documentation: the pages under docs/, one
// per reader, which the README at the repository's root links to. It has
// no code; its tests keep the README a front page (at most 200 lines, a
// "Try it" the shell can run as pasted) and every relative link in the
// README and these pages pointing at a file, and at a heading when it
// names one.
package docs
