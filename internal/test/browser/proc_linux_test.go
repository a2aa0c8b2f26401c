package browser

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestHasWord(t *testing.T) {
	g := NewWithT(t)
	flag := []byte("--user-data-dir=/tmp/x/001")
	g.Expect(hasWord([]byte("chromium\x00--user-data-dir=/tmp/x/001\x00"), flag)).To(BeTrue())
	g.Expect(hasWord([]byte("chromium --user-data-dir=/tmp/x/001 --type=zygote"), flag)).To(BeTrue())
	g.Expect(hasWord([]byte("chromium --user-data-dir=/tmp/x/001"), flag)).To(BeTrue())
	g.Expect(hasWord([]byte("chromium --user-data-dir=/tmp/x/0010 --user-data-dir=/tmp/x/001x"), flag)).To(BeFalse())
}
