#pragma once
// The umbrella header: every public spindle header.

#include <spindle/version.hpp>
