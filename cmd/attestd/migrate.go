package main

import (
	"context"
	"fmt"
)

func runMigrate(ctx context.Context, args []string) error {
	fs := newFlags("migrate")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, log, st, err := commandStore(ctx, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		log.Info("schema is current")
	} else {
		log.Info("migrations applied", "versions", fmt.Sprint(applied))
	}
	return nil
}
