package templating

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseFuncList(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{in: "", want: nil},
		{in: "lookup", want: []string{"lookup"}},
		{in: "lookup,fromSecret", want: []string{"lookup", "fromSecret"}},
		{in: " lookup , fromSecret ,", want: []string{"lookup", "fromSecret"}},
		{in: ",,", want: nil},
	} {
		NewWithT(t).Expect(ParseFuncList(tt.in)).To(Equal(tt.want), "%q", tt.in)
	}
}

// TestDenylistIsNotShared proves that the library's appending the functions
// it always denies never writes into the list Denylist returned, which
// resolutions running at once share.
func TestDenylistIsNotShared(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Denylist(nil)).To(BeNil())
	names := make([]string, 1, 8)
	names[0] = "lookup"
	list := Denylist(names)
	g.Expect(list).To(Equal([]string{"lookup"}))
	g.Expect(list).To(HaveCap(len(list)))
	a := append(list, "env")
	b := append(list, "expandenv")
	g.Expect(a).To(Equal([]string{"lookup", "env"}))
	g.Expect(b).To(Equal([]string{"lookup", "expandenv"}))
}
