#include <gtest/gtest.h>
#include "aotrt/shim.h"
TEST(Smoke, EmptyStrided) {
  int64_t sizes[] = {2, 3}, strides[] = {3, 1};
  AtenTensorHandle t = nullptr;
  ASSERT_EQ(aoti_torch_empty_strided(2, sizes, strides, 6, 0, 0, &t), 0);
  ASSERT_EQ(aoti_torch_delete_tensor_object(t), 0);
  EXPECT_NE(aoti_torch_delete_tensor_object(t), 0);
}
