package main

import (
	"context"
	"fmt"

	"github.com/attestd/attestd/buildinfo"
)

func init() {
	register("version", "print the version", func(context.Context, []string) error {
		fmt.Println(buildinfo.Version)
		return nil
	})
}
