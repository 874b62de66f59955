package bpe_test

// This file holds the package's examples.

import (
	"context"
	"fmt"

	"example.org/minigpt/internal/bpe"
)

// Training on a tiny text, then encoding a new one; the merges are
// worked out by hand in TestTrainHandExample.
func ExampleTrain() {
	tok, err := bpe.Train(context.Background(), "aaaa ab ab", 300)
	if err != nil {
		panic(err)
	}
	for r, m := range tok.Merges() {
		fmt.Printf("merge %d: %q + %q = token %d %q\n", r, tok.Token(m.Left), tok.Token(m.Right), bpe.NumBytes+r, tok.Token(bpe.NumBytes+r))
	}
	ids := tok.Encode("aaaaa ab")
	fmt.Println(ids)
	for _, id := range ids {
		fmt.Printf("%q ", tok.Token(id))
	}
	fmt.Println()
	// Output:
	// merge 0: "a" + "a" = token 256 "aa"
	// merge 1: " " + "a" = token 257 " a"
	// merge 2: " a" + "b" = token 258 " ab"
	// merge 3: "aa" + "aa" = token 259 "aaaa"
	// [259 97 258]
	// "aaaa" "a" " ab"
}

func ExampleSplit() {
	fmt.Printf("%q\n", bpe.Split("The keeper's lamp  burns 24 hours!\n"))
	// Output:
	// ["The" " keeper" "'s" " lamp" " " " burns" " 24" " hours" "!" "\n"]
}

// The merge tree of a token: which two tokens made it, down to bytes.
func ExampleTokenizer_Tree() {
	tok, _ := bpe.Train(context.Background(), "aaaa ab ab", 300)
	n, _ := tok.Tree(258)
	var show func(n *bpe.Node, indent string)
	show = func(n *bpe.Node, indent string) {
		fmt.Printf("%s%d %q\n", indent, n.ID, n.Bytes)
		if n.Left != nil {
			show(n.Left, indent+"  ")
			show(n.Right, indent+"  ")
		}
	}
	show(n, "")
	// Output:
	// 258 " ab"
	//   257 " a"
	//     32 " "
	//     97 "a"
	//   98 "b"
}
