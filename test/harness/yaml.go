package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// DecodeObjects splits a multi-document YAML stream, such as `kustomize
// build` or `helm template` prints, into objects, skipping empty documents.
func DecodeObjects(stream []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read document %d: %w", len(objs)+1, err)
		}
		j, err := utilyaml.ToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", len(objs)+1, err)
		}
		if s := string(bytes.TrimSpace(j)); s == "null" || s == "{}" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("document %d: %w", len(objs)+1, err)
		}
		objs = append(objs, obj)
	}
}
