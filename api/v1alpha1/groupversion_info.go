// Package v1alpha1 holds the NodeHealthPolicy API: per-node-pool timing and
// eviction policy for the node lifecycle controller.
//
// +kubebuilder:object:generate=true
// +groupName=health.nodelifecycle.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of these types.
	GroupVersion = schema.GroupVersion{Group: "health.nodelifecycle.io", Version: "v1alpha1"}

	// SchemeBuilder adds the types of this group and version to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this group and version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &NodeHealthPolicy{}, &NodeHealthPolicyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
