// SPDX-License-Identifier: BSL-1.0
#pragma once
// The umbrella header: every public spindle header but spindle/asio.hpp, which needs Asio
// (include it where Asio is installed; the library itself never depends on Asio).

#include <spindle/algorithms.hpp>
#include <spindle/async.hpp>
#include <spindle/barrier.hpp>
#include <spindle/broadcast.hpp>
#include <spindle/broadcast_result.hpp>
#include <spindle/channel.hpp>
#include <spindle/channel_result.hpp>
#include <spindle/deque.hpp>
#include <spindle/deque_result.hpp>
#include <spindle/diagnostics.hpp>
#include <spindle/dump.hpp>
#include <spindle/executor.hpp>
#include <spindle/executor_options.hpp>
#include <spindle/executor_stats.hpp>
#include <spindle/isolate.hpp>
#include <spindle/join_handle.hpp>
#include <spindle/latch.hpp>
#include <spindle/mutex.hpp>
#include <spindle/notify.hpp>
#include <spindle/oneshot.hpp>
#include <spindle/parallel.hpp>
#include <spindle/select.hpp>
#include <spindle/semaphore.hpp>
#include <spindle/task.hpp>
#include <spindle/task_group.hpp>
#include <spindle/task_scope.hpp>
#include <spindle/task_traits.hpp>
#include <spindle/version.hpp>
#include <spindle/watch.hpp>
#include <spindle/when.hpp>
