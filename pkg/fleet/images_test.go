package fleet

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestImagesAreListedAsAKubeletListsThem(t *testing.T) {
	images := Images(50)
	if len(images) != 50 {
		t.Fatalf("%d images, want 50", len(images))
	}
	seen := map[string]bool{}
	for i, img := range images {
		if len(img.Names) != 2 {
			t.Errorf("image %d has names %v, want a digest and a tag", i, img.Names)
		}
		for _, n := range img.Names {
			if seen[n] {
				t.Errorf("name %s listed twice", n)
			}
			seen[n] = true
		}
		if img.SizeBytes <= 0 || i > 0 && img.SizeBytes >= images[i-1].SizeBytes {
			t.Errorf("image %d is %d bytes after %d: want positive sizes, largest first", i, img.SizeBytes, images[i-1].SizeBytes)
		}
	}
	if again := Images(50); !slices.EqualFunc(images, again, func(a, b corev1.ContainerImage) bool {
		return slices.Equal(a.Names, b.Names) && a.SizeBytes == b.SizeBytes
	}) {
		t.Error("the same count gave another list")
	}
	if n := len(Images(0)); n != 0 {
		t.Errorf("Images(0) lists %d", n)
	}
}
