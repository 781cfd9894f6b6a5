package lifecycletest

import (
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/nodelifecycle/node-lifecycle-controller/config/crd"
)

// CRDs returns the project's CustomResourceDefinitions (NodeHealthPolicy),
// as the installers apply them: for envtest.Environment's CRDs, so that
// the suite's apiserver serves them from its start.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("lifecycletest: list the CRDs: %w", err)
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		raw, err := fs.ReadFile(crd.Bases, f)
		if err != nil {
			return nil, fmt.Errorf("lifecycletest: read %s: %w", f, err)
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, c); err != nil {
			return nil, fmt.Errorf("lifecycletest: decode %s: %w", f, err)
		}
		crds = append(crds, c)
	}
	return crds, nil
}

// InstallCRDs installs the project's CustomResourceDefinitions on the
// apiserver cfg names, or updates them there, and returns once the
// apiserver serves them: for a suite whose apiserver was started without
// them.
func InstallCRDs(cfg *rest.Config) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		return fmt.Errorf("lifecycletest: install the CRDs: %w", err)
	}
	return nil
}
