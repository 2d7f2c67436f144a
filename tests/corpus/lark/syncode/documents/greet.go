package main

import "fmt"

// greet says "hello" to a name.
func greet(name string) string {
	return "hello, " + name + `!` // raw "string"
}

func main() {
	x := "a/*b*/c"
	y := `raw "q" \n`
	fmt.Println(greet(x), y, 0x1F, 3.5e2)
}
