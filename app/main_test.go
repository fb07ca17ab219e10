package app_test

import (
	"testing"

	"github.com/attestd/attestd/internal/testing/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
