// Seed 003's pattern: a Go program that is nearly idle (N goroutines that each sleep
// 1 ms in a loop) yet makes thousands of futex calls a second, all from the runtime:
// each wake-up parks and unparks an M (runtime.notesleep / notewakeup on a futex).
// usage: goidle GOROUTINES SECS      prints pid= first
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	secs, _ := strconv.ParseFloat(os.Args[2], 64)
	fmt.Printf("pid=%d\n", os.Getpid())
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
}
