package premium

import (
	"testing"

	"github.com/attestd/attestd/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
