// The three oneDNN modes of Note [oneDNN layouts] (src/cpu/conv.cpp), timed
// per convolution with the weight reorder paid on every call (an unknown
// weight) and without it (a constant's weight reordered once, Note
// [Constant storages]). Shapes: every distinct convolution of resnet18 and
// resnet50 at batch 1, and mobilenet_v3_small's larger ones, in the layout
// aotrt sees them in the packages bench/compare.py exports (channels-last),
// and NCHW for comparison.
//
//   g++ -O2 -std=c++20 bench/conv_modes.cpp -ldnnl -o build/conv_modes
//   OMP_NUM_THREADS=1 build/conv_modes [rounds]
//
// Prints, per shape and layout, the minimum over rounds of the median of 20
// calls, in us, for: 1 user | 2 weights (+reorder) | 2 cached | 3 any
// (+weight reorder) | 3 cached; "ref" where the mode gets oneDNN's
// reference kernel, "-" where it has none.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

using dnnl::memory;
using Dims = memory::dims;

struct Shape {
  const char* name;
  int64_t c_in, c_out, hw, k, stride, pad, groups;
};

const Shape kShapes[] = {
    {"r18 conv1 7x7 3->64 224", 3, 64, 224, 7, 2, 3, 1},
    {"r18 3x3 64->64 56", 64, 64, 56, 3, 1, 1, 1},
    {"r18 3x3 64->128 56 s2", 64, 128, 56, 3, 2, 1, 1},
    {"r18 1x1 64->128 56 s2", 64, 128, 56, 1, 2, 0, 1},
    {"r18 3x3 128->128 28", 128, 128, 28, 3, 1, 1, 1},
    {"r18 3x3 256->256 14", 256, 256, 14, 3, 1, 1, 1},
    {"r18 3x3 512->512 7", 512, 512, 7, 3, 1, 1, 1},
    {"r50 1x1 64->256 56", 64, 256, 56, 1, 1, 0, 1},
    {"r50 1x1 256->64 56", 256, 64, 56, 1, 1, 0, 1},
    {"r50 1x1 1024->256 14", 1024, 256, 14, 1, 1, 0, 1},
    {"r50 1x1 512->2048 7", 512, 2048, 7, 1, 1, 0, 1},
    {"mnv3 1x1 16->72 56", 16, 72, 56, 1, 1, 0, 1},
    {"mnv3 dw 5x5 240 14", 240, 240, 14, 5, 1, 2, 240},
};

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Mode {
  std::optional<dnnl::convolution_forward::primitive_desc> pd;
  bool reference = false;
};

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  using dt = memory::data_type;
  using tag = memory::format_tag;
  std::printf("%-26s %-4s %8s %8s %8s %8s %8s\n", "shape", "lay", "1 user", "2 +wr", "2 cache",
              "3 +wr", "3 cache");
  for (const Shape& sh : kShapes) {
    for (bool nhwc : {true, false}) {
      const int64_t oh = (sh.hw + 2 * sh.pad - sh.k) / sh.stride + 1;
      const Dims src_d{1, sh.c_in, sh.hw, sh.hw}, dst_d{1, sh.c_out, oh, oh};
      const Dims wei_d = sh.groups > 1 ? Dims{sh.groups, sh.c_out / sh.groups,
                                              sh.c_in / sh.groups, sh.k, sh.k}
                                       : Dims{sh.c_out, sh.c_in, sh.k, sh.k};
      const tag act = nhwc ? tag::nhwc : tag::nchw;
      // Weights as torch keeps them: OIhw, or channels-last (ohwi) when the
      // package's layout optimisation made the weight channels-last too.
      const tag wt = sh.groups > 1 ? (nhwc ? tag::gohwi : tag::goihw) : (nhwc ? tag::ohwi : tag::oihw);
      const memory::desc usrc(src_d, dt::f32, act), udst(dst_d, dt::f32, act),
          uwei(wei_d, dt::f32, wt), bias({sh.c_out}, dt::f32, tag::a);
      const memory::desc asrc(src_d, dt::f32, tag::any), adst(dst_d, dt::f32, tag::any),
          awei(wei_d, dt::f32, tag::any);
      dnnl::primitive_attr attr;
      auto make = [&](const memory::desc& src, const memory::desc& wei, const memory::desc& dst) {
        Mode m;
        dnnl::convolution_forward::desc d(
            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, wei,
            bias, dst, {sh.stride, sh.stride}, {0, 0}, {sh.pad, sh.pad}, {sh.pad, sh.pad});
        try {
          m.pd = dnnl::convolution_forward::primitive_desc(d, attr, eng);
          m.reference = std::string(m.pd->impl_info_str()).rfind("ref", 0) == 0;
        } catch (const dnnl::error&) {
        }
        return m;
      };
      Mode modes[3] = {make(usrc, uwei, udst), make(usrc, awei, udst), make(asrc, awei, adst)};
      memory m_src(usrc, eng), m_wei(uwei, eng), m_dst(udst, eng), m_bias(bias, eng);
      for (memory* m : {&m_src, &m_wei, &m_bias}) {
        float* p = static_cast<float*>(m->get_data_handle());
        for (size_t i = 0; i < m->get_desc().get_size() / 4; ++i) p[i] = float(i % 7) * 0.1f;
      }
      // Per timed variant: the callable, and the best median so far.
      struct Variant {
        std::function<void()> run;
        double best = 1e30;
        std::string label;
      };
      std::vector<Variant> vars(5);
      for (int mi = 0; mi < 3; ++mi) {
        const Mode& m = modes[mi];
        std::vector<int> slots = mi == 0 ? std::vector<int>{0} : std::vector<int>{mi * 2 - 1, mi * 2};
        if (!m.pd || m.reference) {
          for (int slot : slots) vars[slot].label = !m.pd ? "-" : "ref";
          continue;
        }
        auto conv = std::make_shared<dnnl::convolution_forward>(*m.pd);
        auto csrc = std::make_shared<memory>(m.pd->src_desc(), eng);
        auto cwei = std::make_shared<memory>(m.pd->weights_desc(), eng);
        auto cdst = std::make_shared<memory>(m.pd->dst_desc(), eng);
        const bool rs = m.pd->src_desc() != usrc, rd = m.pd->dst_desc() != udst,
                   rw = m.pd->weights_desc() != uwei;
        auto r_src = rs ? std::make_shared<dnnl::reorder>(m_src, *csrc) : nullptr;
        auto r_dst = rd ? std::make_shared<dnnl::reorder>(*cdst, m_dst) : nullptr;
        auto r_wei = rw ? std::make_shared<dnnl::reorder>(m_wei, *cwei) : nullptr;
        if (r_wei) r_wei->execute(s, m_wei, *cwei);
        for (int slot : slots) {
          const bool pay_weights = mi == 0 || slot == mi * 2 - 1;
          vars[slot].run = [=, &s, &m_src, &m_wei, &m_dst, &m_bias] {
            if (r_src) r_src->execute(s, m_src, *csrc);
            if (pay_weights && r_wei) r_wei->execute(s, m_wei, *cwei);
            conv->execute(s, {{DNNL_ARG_SRC, rs ? *csrc : m_src},
                              {DNNL_ARG_WEIGHTS, rw ? *cwei : m_wei},
                              {DNNL_ARG_BIAS, m_bias},
                              {DNNL_ARG_DST, rd ? *cdst : m_dst}});
            if (r_dst) r_dst->execute(s, *cdst, m_dst);
            s.wait();
          };
        }
      }
      for (int r = 0; r < rounds; ++r) {
        for (Variant& v : vars) {
          if (!v.run) continue;
          v.run();  // warm
          std::vector<double> t;
          for (int i = 0; i < 20; ++i) {
            const double t0 = now_us();
            v.run();
            t.push_back(now_us() - t0);
          }
          std::nth_element(t.begin(), t.begin() + 10, t.end());
          v.best = std::min(v.best, t[10]);
        }
      }
      std::printf("%-26s %-4s", sh.name, nhwc ? "nhwc" : "nchw");
      for (const Variant& v : vars) {
        if (v.run) std::printf(" %8.0f", v.best);
        else std::printf(" %8s", v.label.c_str());
      }
      std::printf("   [%s | %s | %s]\n", modes[0].pd ? modes[0].pd->impl_info_str() : "-",
                  modes[1].pd ? modes[1].pd->impl_info_str() : "-",
                  modes[2].pd ? modes[2].pd->impl_info_str() : "-");
      std::fflush(stdout);
    }
  }
}
