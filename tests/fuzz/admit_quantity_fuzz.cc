// Kubernetes resource quantities (admit/api/quantity.h), as found in pod requests and node
// capacity. Invariant: a parsed quantity printed as kubectl prints it (bytes, millicores)
// parses back to the same value.

#include "admit/api/quantity.h"
#include "tests/fuzz/fuzz_target.h"

NG_FUZZ_TARGET(admit_quantity) {
  const auto quantity = admit::Quantity::Parse(data);
  if (!quantity.ok()) {
    return;
  }
  const int64_t units = quantity->Value();
  const auto bytes = admit::Quantity::Parse(admit::FormatBytes(units));
  NG_FUZZ_CHECK(bytes.ok() && bytes->Value() == units);
  const int64_t milli = quantity->MilliValue();
  const auto cpu = admit::Quantity::Parse(admit::FormatMilliCpu(milli));
  NG_FUZZ_CHECK(cpu.ok() && cpu->MilliValue() == milli);
  admit::Quantity sum = *quantity;
  sum.Add(*quantity);
  NG_FUZZ_CHECK(quantity->IsNegative() ? !(*quantity < sum) : !(sum < *quantity));
}
