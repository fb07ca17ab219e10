package premium

import (
	"testing"

	"github.com/attestd/attestd/internal/apptest"
)

func TestMain(m *testing.M) { apptest.Main(m) }
