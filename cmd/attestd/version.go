package main

import (
	"context"
	"fmt"

	"github.com/attestd/attestd/internal/buildinfo"
)

func runVersion(context.Context, []string) error {
	fmt.Println(buildinfo.Version)
	return nil
}
