package lazy

import (
	"reflect"
	"testing"

	"github.com/loom-go/loom/fusion"
)

// TestAttrKeyCoversEveryField: setting any one field of fusion.Attrs
// changes the key of the attributes (a field the key missed would make
// two different operations one cached shape, and one compiled trace).
func TestAttrKeyCoversEveryField(t *testing.T) {
	zero := string(appendAttrs(nil, fusion.Attrs{}))
	typ := reflect.TypeFor[fusion.Attrs]()
	for i := range typ.NumField() {
		var a fusion.Attrs
		f := reflect.ValueOf(&a).Elem().Field(i)
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(3)
		case reflect.String:
			f.SetString("s")
		default:
			t.Fatalf("field %s of kind %s: teach this test and appendAttrs", typ.Field(i).Name, f.Kind())
		}
		if string(appendAttrs(nil, a)) == zero {
			t.Errorf("field %s is not in the key", typ.Field(i).Name)
		}
	}
	// nil and empty differ; so do two different values
	if string(appendAttrs(nil, fusion.Attrs{Axes: []int{}})) == zero {
		t.Error("an empty axes list keys as none")
	}
	if string(appendAttrs(nil, fusion.Attrs{DType: "ab", Layout: "c"})) == string(appendAttrs(nil, fusion.Attrs{DType: "a", Layout: "bc"})) {
		t.Error("two strings run together")
	}
}
