package web_test

import (
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
