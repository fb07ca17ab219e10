package premium

import (
	"testing"

	"github.com/attestd/attestd/internal/testing/apptest"
)

func TestMain(m *testing.M) { apptest.Main(m) }
