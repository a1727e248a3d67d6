// GemmQuantizers: the slots of a GEMM's pass recipes, the what-if quantizers, and the BF16
// statistics of unquantized passes.
#include "core/precision/gemm_quantizers.h"

#include <algorithm>
#include <cmath>

#include "core/numeric/element_formats.h"
#include "core/numeric/bfloat16.h"
#include "core/numeric/format.h"
#include "core/precision/precision_rules.h"

namespace mpwb {

ScalingStats bf16_operand_stats(const float* values, int64_t n) {
    ScalingStats s;
    s.element = Format::BF16;
    s.values = n;
    double signal = 0, noise = 0;
    int64_t nonzero = 0, flushed = 0, overflowed = 0;
    float amax = 0;
    for (int64_t i = 0; i < n; ++i) {
        const float x = values[i];
        const float r = round_to_bf16(x);
        amax = std::fabs(x) > amax || std::isnan(x) ? std::fabs(x) : amax;
        if (x != 0.0f) ++nonzero;
        if (x != 0.0f && r == 0.0f) ++flushed;
        if (std::isinf(r) && std::isfinite(x)) ++overflowed;
        signal += double(x) * x;
        noise += (double(x) - r) * (double(x) - r);
    }
    s.amax = amax;
    s.underflow_fraction = nonzero ? double(flushed) / double(nonzero) : 0.0;
    s.saturate_fraction = n ? double(overflowed) / double(n) : 0.0;
    s.sqnr_db = noise == 0 ? 999.0 : signal == 0 ? 0.0 : 10.0 * std::log10(signal / noise);
    return s;
}

std::vector<ScaledRecipeConfig> slot_settings(const PassRecipes& passes) {
    std::vector<ScaledRecipeConfig> slots;
    for (const auto& p : passes)
        if (p &&
            std::none_of(slots.begin(), slots.end(), [&](const auto& s) { return s.recipe == p->recipe; }))
            slots.push_back(*p);
    return slots;
}

GemmQuantizers::GemmQuantizers(const PassRecipes& passes, uint64_t seed, uint64_t key, bool bf16_passes)
    : seed_(seed), key_(key), bf16_passes_(bf16_passes) {
    set_passes(passes);
}

GemmQuantizers::~GemmQuantizers() = default;

uint64_t GemmQuantizers::slot_key(size_t slot) const {
    return slot == 0 ? key_ : splitmix64_finalise(key_ ^ (0xA5A5A5A5ull * (slot + 1)));
}

void GemmQuantizers::set_passes(const PassRecipes& passes) {
    std::vector<Slot> kept;
    slot_of_pass_.fill(-1);
    for (size_t p = 0; p < passes.size(); ++p) {
        if (!passes[p]) continue;
        const ScaledRecipe recipe = passes[p]->recipe;
        auto found =
            std::find_if(kept.begin(), kept.end(), [&](const Slot& s) { return s.recipe == recipe; });
        if (found == kept.end()) {
            auto old = std::find_if(slots_.begin(), slots_.end(),
                                    [&](const Slot& s) { return s.quantizer && s.recipe == recipe; });
            if (old != slots_.end()) {
                old->quantizer->set_config(*passes[p]);
                kept.push_back(std::move(*old));
            } else {
                kept.push_back(
                    {recipe, std::make_unique<GemmQuantizer>(*passes[p], seed_, slot_key(kept.size()))});
            }
            found = kept.end() - 1;
        }
        slot_of_pass_[p] = static_cast<int>(found - kept.begin());
    }
    slots_ = std::move(kept);
}

void GemmQuantizers::set_what_if(const std::vector<WhatIfRecipe>& what_if) {
    std::vector<WhatIf> next;
    for (const WhatIfRecipe& w : what_if) {
        auto old = std::find_if(what_if_.begin(), what_if_.end(),
                                [&](const WhatIf& o) { return o.ticked == w.ticked; });
        WhatIf entry{w.ticked, nullptr};
        if (old != what_if_.end() && old->quantizer && w.settings &&
            old->quantizer->config().recipe == w.settings->recipe) {
            entry.quantizer = std::move(old->quantizer);
            entry.quantizer->set_config(*w.settings);
        } else if (w.settings) {
            entry.quantizer = std::make_unique<GemmQuantizer>(*w.settings, seed_, key_);
        }
        next.push_back(std::move(entry));
    }
    what_if_ = std::move(next);
}

bool GemmQuantizers::active() const {
    return !slots_.empty() || std::any_of(what_if_.begin(), what_if_.end(),
                                          [](const WhatIf& w) { return w.quantizer != nullptr; });
}

void GemmQuantizers::begin_step(int64_t step, bool take_stats) {
    take_stats_ = take_stats;
    bf16_stats_.clear();
    bf16_seen_.clear();
    bf16_used_ = 0;
    for (Slot& s : slots_) s.quantizer->begin_step(step, take_stats);
    if (take_stats)
        for (WhatIf& w : what_if_)
            if (w.quantizer) w.quantizer->begin_step(step, true);
}

void GemmQuantizers::end_step() {
    for (Slot& s : slots_) s.quantizer->end_step();
    if (take_stats_)
        for (WhatIf& w : what_if_)
            if (w.quantizer) w.quantizer->end_step();
}

const float* GemmQuantizers::operand(GemmOperand which, GemmPass pass, SumAlong along, const float* values,
                                     int64_t rows, int64_t cols) {
    last_pass_ = pass;
    if (take_stats_)
        for (WhatIf& w : what_if_)
            if (w.quantizer) w.quantizer->operand(which, pass, along, values, rows, cols);
    const int slot = slot_of_pass_[static_cast<size_t>(pass)];
    if (slot >= 0)
        return slots_[static_cast<size_t>(slot)].quantizer->operand(which, pass, along, values, rows, cols);
    if (!bf16_passes_) return values;
    if (take_stats_) record_bf16(which, pass, values, rows * cols);
    return bf16_operand(values, rows * cols);
}

const float* GemmQuantizers::bf16_operand(const float* values, int64_t n) {
    for (size_t i = 0; i < bf16_used_; ++i)
        if (bf16_copies_[i].source == values && bf16_copies_[i].count == n)
            return bf16_copies_[i].values.data();
    if (bf16_used_ == bf16_copies_.size()) bf16_copies_.emplace_back();
    Bf16Copy& copy = bf16_copies_[bf16_used_++];
    copy.source = values;
    copy.count = n;
    copy.values.resize(static_cast<size_t>(n));
    round_to_format(Format::BF16, values, copy.values.data(), static_cast<size_t>(n));
    return copy.values.data();
}

void GemmQuantizers::record_bf16(GemmOperand which, GemmPass pass, const float* values, int64_t n) {
    const auto key = std::make_pair(which, pass);
    if (std::find(bf16_seen_.begin(), bf16_seen_.end(), key) != bf16_seen_.end()) return;
    bf16_seen_.push_back(key);
    ScalingStats s = bf16_operand_stats(values, n);
    s.operand = gemm_operand_name(which, pass, false);
    s.recipe = "bf16";
    bf16_stats_.push_back(std::move(s));
}

const ScaledRecipeConfig* GemmQuantizers::serving() const {
    const int slot = slot_of_pass_[static_cast<size_t>(last_pass_)];
    return slot >= 0 ? &slots_[static_cast<size_t>(slot)].quantizer->config() : nullptr;
}

GemmQuantizer* GemmQuantizers::quantizer_of(GemmPass pass) {
    const int slot = slot_of_pass_[static_cast<size_t>(pass)];
    return slot >= 0 ? slots_[static_cast<size_t>(slot)].quantizer.get() : nullptr;
}

const GemmQuantizer* GemmQuantizers::what_if_quantizer(ScaledRecipe ticked) const {
    for (const WhatIf& w : what_if_)
        if (w.ticked == ticked) return w.quantizer.get();
    return nullptr;
}

std::vector<ScalingStats> GemmQuantizers::stats() const {
    std::vector<ScalingStats> all;
    for (const Slot& s : slots_)
        for (ScalingStats st : s.quantizer->stats()) {
            st.recipe = scaled_recipe_name(s.recipe);
            all.push_back(std::move(st));
        }
    all.insert(all.end(), bf16_stats_.begin(), bf16_stats_.end());
    if (!take_stats_) return all;
    for (const WhatIf& w : what_if_)
        if (w.quantizer)
            for (ScalingStats st : w.quantizer->stats()) {
                st.recipe = scaled_recipe_name(w.ticked);
                st.what_if = true;
                all.push_back(std::move(st));
            }
    return all;
}

}  // namespace mpwb
