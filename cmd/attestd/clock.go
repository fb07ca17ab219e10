package main

import "time"

var timeNow = time.Now
