package fleet

import (
	"crypto/sha256"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Images returns n container images as a kubelet lists them in its Node's
// status: largest first, from 1,000 MiB down in even steps, each named by
// its digest and its tag. The same n give the same list.
func Images(n int) []corev1.ContainerImage {
	images := make([]corev1.ContainerImage, n)
	for i := range images {
		repo := fmt.Sprintf("registry.example/fleet/image-%02d", i)
		images[i] = corev1.ContainerImage{
			Names: []string{
				fmt.Sprintf("%s@sha256:%x", repo, sha256.Sum256([]byte(repo))),
				fmt.Sprintf("%s:v1.%d.0", repo, i),
			},
			SizeBytes: int64(1000-i*990/n) << 20,
		}
	}
	return images
}
