package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestCheckSchema: an empty database, a partly migrated one, a current one
// and one a newer binary migrated each get the verdict and versions they
// deserve.
func TestCheckSchema(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, testenv.Database(t), Options{})
	testenv.Must(t, err, "open")
	defer st.Close()
	ms, err := Migrations()
	testenv.Must(t, err, "migrations")
	need := versionNumber(ms[len(ms)-1].Version)

	s, err := st.CheckSchema(ctx)
	testenv.Must(t, err, "check empty")
	if s.Current() || s.Have != 0 || s.Need != need || !errors.Is(s.Err(), ErrSchemaBehind) {
		t.Fatalf("empty database: %+v %v", s, s.Err())
	}
	if msg := s.Err().Error(); !strings.Contains(msg, "attestd migrate") || !strings.Contains(msg, "have version 0") {
		t.Fatalf("empty database: the error should say have 0 and run attestd migrate: %s", msg)
	}

	_, err = st.Migrate(ctx)
	testenv.Must(t, err, "migrate")
	s, err = st.CheckSchema(ctx)
	testenv.Must(t, err, "check current")
	if !s.Current() || s.Err() != nil || s.Have != need {
		t.Fatalf("migrated database: %+v %v", s, s.Err())
	}

	last := ms[len(ms)-1].Version
	_, err = st.Pool().Exec(ctx, "DELETE FROM schema_migrations WHERE version = $1", last)
	testenv.Must(t, err, "forget the last migration")
	s, err = st.CheckSchema(ctx)
	testenv.Must(t, err, "check behind")
	if want := "need " + itoa(need); !errors.Is(s.Err(), ErrSchemaBehind) || !strings.Contains(s.Err().Error(), want) ||
		!strings.Contains(s.Err().Error(), last) {
		t.Fatalf("one migration behind: want %q and %s in %v", want, last, s.Err())
	}
	_, err = st.Pool().Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1), ('9999_from_the_future')", last)
	testenv.Must(t, err, "record a newer migration")
	s, err = st.CheckSchema(ctx)
	testenv.Must(t, err, "check ahead")
	if !errors.Is(s.Err(), ErrSchemaAhead) || s.Have != 9999 || !strings.Contains(s.Err().Error(), "9999_from_the_future") {
		t.Fatalf("database ahead: %+v %v", s, s.Err())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
