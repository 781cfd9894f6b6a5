package refdocs

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// API renders a CustomResourceDefinition: for each served version, every
// field of spec and status with its type, constraints and description.
func API(crdYAML []byte) (string, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(crdYAML, crd); err != nil {
		return "", fmt.Errorf("read the CustomResourceDefinition: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(generated)
	names := crd.Spec.Names
	fmt.Fprintf(&b, "# %s API\n\n", names.Kind)
	fmt.Fprintf(&b, "Group `%s`, kind `%s` (`%s`; short names %s), %s-scoped.\n", crd.Spec.Group, names.Kind, names.Plural,
		codeList(names.ShortNames), strings.ToLower(string(crd.Spec.Scope)))
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		fmt.Fprintf(&b, "\n## %s/%s\n", crd.Spec.Group, v.Name)
		root := v.Schema.OpenAPIV3Schema
		if root.Description != "" {
			fmt.Fprintf(&b, "\n%s\n", root.Description)
		}
		for _, part := range []string{"spec", "status"} {
			s, ok := root.Properties[part]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "\n### `%s`\n\n", part)
			if s.Description != "" {
				fmt.Fprintf(&b, "%s\n\n", s.Description)
			}
			for _, rule := range s.XValidations {
				fmt.Fprintf(&b, "- Rule: %s\n", ruleText(rule))
			}
			if len(s.XValidations) > 0 {
				b.WriteString("\n")
			}
			b.WriteString("| Field | Type | Required | Constraints | Description |\n|---|---|---|---|---|\n")
			fields(&b, part, &s)
		}
	}
	return b.String(), nil
}

// fields writes a row for each property of s, depth first, in name order.
func fields(b *bytes.Buffer, path string, s *apiextensionsv1.JSONSchemaProps) {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := s.Properties[n]
		at := path + "." + n
		required := ""
		if slices.Contains(s.Required, n) {
			required = "yes"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", at, typeOf(&p), required, cell(constraints(&p)), cell(p.Description))
		switch {
		case p.Type == "array" && p.Items != nil && p.Items.Schema != nil:
			fields(b, at+"[]", p.Items.Schema)
		case len(p.Properties) > 0:
			fields(b, at, &p)
		}
	}
}

// typeOf names a property's type.
func typeOf(p *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case p.XIntOrString:
		return "integer or string"
	case p.Type == "array" && p.Items != nil && p.Items.Schema != nil:
		return typeOf(p.Items.Schema) + " list"
	case p.Type == "object" && p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil:
		return "map of " + typeOf(p.AdditionalProperties.Schema)
	case p.Format != "":
		return p.Type + " (" + p.Format + ")"
	}
	return p.Type
}

// constraints lists a property's default, bounds, allowed values and rules.
func constraints(p *apiextensionsv1.JSONSchemaProps) string {
	var out []string
	if p.Default != nil {
		out = append(out, "default "+code(string(p.Default.Raw)))
	}
	if p.Minimum != nil {
		out = append(out, "minimum "+strconv.FormatFloat(*p.Minimum, 'g', -1, 64))
	}
	if p.Maximum != nil {
		out = append(out, "maximum "+strconv.FormatFloat(*p.Maximum, 'g', -1, 64))
	}
	if p.MaxLength != nil {
		out = append(out, "at most "+strconv.FormatInt(*p.MaxLength, 10)+" characters")
	}
	if p.MaxItems != nil {
		out = append(out, "at most "+strconv.FormatInt(*p.MaxItems, 10)+" items")
	}
	if p.Pattern != "" {
		out = append(out, "matches "+code(p.Pattern))
	}
	if len(p.Enum) > 0 {
		values := make([]string, len(p.Enum))
		for i, e := range p.Enum {
			values[i] = code(string(e.Raw))
		}
		out = append(out, "one of "+strings.Join(values, ", "))
	}
	for _, rule := range p.XValidations {
		out = append(out, ruleText(rule))
	}
	return strings.Join(out, "; ")
}

// ruleText tells a validation rule by its message, or its expression.
func ruleText(r apiextensionsv1.ValidationRule) string {
	if r.Message != "" {
		return r.Message
	}
	return code(r.Rule)
}

func codeList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = code(n)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
