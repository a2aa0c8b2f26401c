package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the server-side apply field manager of Apply.
const FieldManager = "canopy-testenv"

// ReadObjects reads every object of the given YAML files, and of the *.yaml
// files of the given directories (not recursively; kustomization.yaml is
// skipped), in order. Paths are relative to the working directory.
func ReadObjects(paths ...string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, path := range paths {
		files, err := yamlFiles(path)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			read, err := readFile(file)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", file, err)
			}
			objs = append(objs, read...)
		}
	}
	return objs, nil
}

func yamlFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.yaml"))
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" }), nil
}

func readFile(file string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(obj.Object) > 0 { // an empty document between two ---
			objs = append(objs, obj)
		}
	}
}

// Apply creates or updates objs on c by server-side apply, namespaces and
// CustomResourceDefinitions first so that what is in them can follow.
func Apply(ctx context.Context, c client.Client, objs ...*unstructured.Unstructured) error {
	ordered := slices.Clone(objs)
	slices.SortStableFunc(ordered, func(a, b *unstructured.Unstructured) int {
		return applyRank(a) - applyRank(b)
	})
	var errs []error
	for _, obj := range ordered {
		obj = obj.DeepCopy()
		obj.SetManagedFields(nil)
		obj.SetResourceVersion("")
		cfg := client.ApplyConfigurationFromUnstructured(obj)
		if err := c.Apply(ctx, cfg, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			errs = append(errs, fmt.Errorf("applying %s %s: %w", obj.GetKind(), objectName(obj), err))
		}
	}
	return errors.Join(errs...)
}

func applyRank(obj *unstructured.Unstructured) int {
	switch obj.GetKind() {
	case "Namespace", "CustomResourceDefinition":
		return 0
	default:
		return 1
	}
}

func objectName(obj *unstructured.Unstructured) string {
	return strings.TrimPrefix(obj.GetNamespace()+"/"+obj.GetName(), "/")
}
