// SPDX-License-Identifier: BSL-1.0
// The Go anchors of spindle-bench: standard library only, so the module has no requirements.
module spindle/anchors

go 1.19
