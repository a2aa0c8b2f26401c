package configpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestObjectDiff(t *testing.T) {
	g := NewWithT(t)
	existing := value(t, `{kind: ConfigMap, metadata: {name: a, resourceVersion: "3", managedFields: [{}]}, data: {k: old, z: same}}`)
	desired := value(t, `{kind: ConfigMap, metadata: {name: a, resourceVersion: "3"}, data: {k: new, z: same}}`)
	g.Expect(objectDiff("ns/a", existing.(map[string]any), desired.(map[string]any))).To(Equal(`--- ns/a : existing
+++ ns/a : updated
@@ -1,7 +1,7 @@
 data:
-  k: old
+  k: new
   z: same
 kind: ConfigMap
 metadata:
   name: a
   resourceVersion: "3"
`))
	secret := value(t, `{kind: Secret, data: {k: b2xk}}`).(map[string]any)
	g.Expect(objectDiff("ns/s", secret, secret)).To(Equal(redactedDiff))
}
