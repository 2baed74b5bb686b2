package report

import "github.com/trajlab/traj/replay"

// FreshSuite is the C environment's generated suite (replay.FreshSuite,
// which owns the public − fresh gap rule: replay.FreshGap).
const FreshSuite = replay.FreshSuite
