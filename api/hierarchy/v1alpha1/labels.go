package v1alpha1

// Labels of namespaces in the live-propagation tree (docs/api/hierarchy-v1alpha1.md, "Live
// propagation").
const (
	// TypeLabel marks a namespace as a template namespace (TypeTemplate) or
	// as the root of a tree of sub-namespaces (TypeRoot).
	TypeLabel = GroupName + "/type"

	// TypeTemplate is the TypeLabel value of a template namespace, whose
	// propagated objects, labels and annotations are copied to the
	// namespaces that name it with TemplateLabel.
	TypeTemplate = "template"

	// TypeRoot is the TypeLabel value of a root namespace, in which
	// SubNamespace objects may create child namespaces.
	TypeRoot = "root"

	// TemplateLabel on a namespace names its template namespace.
	TemplateLabel = GroupName + "/template"

	// ParentLabel on a namespace names its parent namespace. The syncer sets
	// it on the namespaces it creates for SubNamespaces.
	ParentLabel = GroupName + "/parent"
)

// Annotations of objects in the live-propagation tree (docs/api/hierarchy-v1alpha1.md, "Live
// propagation").
const (
	// PropagateAnnotation on an object in a template, root or parent
	// namespace copies the object to the descendant namespaces, with the
	// mode PropagateCreate or PropagateUpdate.
	PropagateAnnotation = GroupName + "/propagate"

	// PropagateCreate creates a copy only where none exists, and never
	// updates or deletes it.
	PropagateCreate = "create"

	// PropagateUpdate keeps copies identical to the source, and deletes them
	// when the source goes or the namespace leaves the tree.
	PropagateUpdate = "update"

	// FromAnnotation on a propagated copy names the namespace it was copied
	// from.
	FromAnnotation = GroupName + "/from"

	// PropagateGeneratedAnnotation on an object makes the syncer set
	// PropagateAnnotation, with the same value, on the objects of the
	// propagated kinds that it controls (controller owner reference), so
	// that what a controller generates propagates too.
	PropagateGeneratedAnnotation = GroupName + "/propagate-generated"
)

// Labels and annotations of every object the syncer writes.
const (
	// GeneratedByLabel is set on every object a generator creates; its value
	// is "<policy name>.<generator name>", so that
	// `kubectl get KIND -A -l hierarchy.canopy.io/generated-by=...` lists (or
	// deletes) them all.
	GeneratedByLabel = GroupName + "/generated-by"

	// PolicyLabel is set on every object a HierarchyPolicy applies from its
	// declared tree (nodes and clusterResources); its value is the
	// HierarchyPolicy's name. It is how objects removed from the declaration
	// are found and deleted, across restarts.
	PolicyLabel = GroupName + "/policy"

	// SourceAnnotation is set on every object Canopy writes; its value names,
	// for people, the source the object comes from.
	SourceAnnotation = GroupName + "/source"

	// ManagedByLabel is the well-known Kubernetes label set, with the value
	// ManagedByValue, on every object Canopy writes.
	ManagedByLabel = "app.kubernetes.io/managed-by"

	// ManagedByValue is the value of ManagedByLabel on Canopy's objects.
	ManagedByValue = "canopy"
)
