// detail::available_cpus: the processors this process may use, from its affinity mask and its
// cgroup v2 CPU quota.
#include <spindle/detail/sync/available_cpus.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <optional>

#if defined(__linux__)
#include <sched.h>
#endif

using spindle::detail::affinity_cpu_count;
using spindle::detail::available_cpus;
using spindle::detail::cgroup_cpu_quota;
using spindle::detail::parse_cpu_max;

TEST(AvailableCpus, Example) {
  // The count an executor starts by default: at least one, never more than the affinity mask.
  EXPECT_GE(available_cpus(), 1U);
  EXPECT_LE(available_cpus(), affinity_cpu_count());
}

TEST(AvailableCpus, CpuMaxWithoutQuotaIsNoQuota) {
  EXPECT_EQ(parse_cpu_max("max 100000"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("max 100000\n"), std::nullopt);
}

TEST(AvailableCpus, CpuMaxQuotaIsRoundedUp) {
  EXPECT_EQ(parse_cpu_max("200000 100000"), std::optional<std::size_t>(2));
  EXPECT_EQ(parse_cpu_max("150000 100000"), std::optional<std::size_t>(2));
  EXPECT_EQ(parse_cpu_max("150000 100000\n"), std::optional<std::size_t>(2));
  EXPECT_EQ(parse_cpu_max("100001 100000"), std::optional<std::size_t>(2));
}

TEST(AvailableCpus, CpuMaxQuotaBelowOneProcessorGivesOne) {
  EXPECT_EQ(parse_cpu_max("50000 100000"), std::optional<std::size_t>(1));
  EXPECT_EQ(parse_cpu_max("1 100000"), std::optional<std::size_t>(1));
}

TEST(AvailableCpus, CpuMaxGarbageIsNoQuota) {
  EXPECT_EQ(parse_cpu_max(""), std::nullopt);
  EXPECT_EQ(parse_cpu_max("garbage"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("150000"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("150000  100000"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("-1 100000"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("0 100000"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("150000 0"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("150000 100000 7"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("99999999999999999999999 100000"), std::nullopt);
}

TEST(AvailableCpus, AffinityCountMatchesSchedGetaffinity) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(affinity_cpu_count(), static_cast<std::size_t>(CPU_COUNT(&set)));
#else
  GTEST_SKIP() << "no affinity mask on this platform";
#endif
}

TEST(AvailableCpus, QuotaCapsTheAffinityCount) {
  std::size_t expected = affinity_cpu_count();
  if (auto const quota = cgroup_cpu_quota()) {
    expected = std::min(expected, *quota);
  }
  EXPECT_EQ(available_cpus(), expected);
}
