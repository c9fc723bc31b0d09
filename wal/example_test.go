package wal_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/seckill/seckill/wal"
)

func Example() {
	root, _ := os.MkdirTemp("", "wal-example")
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "sku-42")

	l, err := wal.Open(dir, wal.Options{})
	if err != nil {
		panic(err)
	}
	index, err := l.Append(2, []byte("reserved token 7 for user u-1"))
	if err != nil {
		panic(err)
	}
	durable := make(chan error, 1)
	l.Await(index, wal.WaiterFunc(func(err error) { durable <- err }))
	fmt.Println("record", index, "durable:", <-durable == nil)
	l.Close()

	l, _ = wal.Open(dir, wal.Options{}) // recovery: replay, then append
	defer l.Close()
	l.Replay(0, func(index uint64, typ byte, payload []byte) error {
		fmt.Printf("replay %d type %d %q\n", index, typ, payload)
		return nil
	})
	// Output:
	// record 1 durable: true
	// replay 1 type 2 "reserved token 7 for user u-1"
}
