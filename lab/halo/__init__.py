"""HALO: Hadamard-Assisted Lower-Precision Optimization for LLMs.

Saleh Ashkboos, Mahdi Nikdan, Soroush Tabesh, Roberto L. Castro, Torsten Hoefler, Dan
Alistarh. NeurIPS 2025. https://arxiv.org/abs/2501.02625 (official code: IST-DASLab/HALO).

A linear layer ``Y = X Wᵀ`` runs its three matmuls (forward ``X Wᵀ``, input gradient
``E_X = E_Y W``, weight gradient ``G = E_Yᵀ X``) in INT8/FP8/FP6. Outliers (activation
*channels* of ``X``, error *tokens* of ``E_Y``) waste a per-tensor scale; an orthogonal
Hadamard rotation ``H`` spreads them, and is placed where it cancels (the inner dimension,
``(XH)(WH)ᵀ = X Wᵀ``) or where it can be undone after the product (the tokens of ``E_Y`` for
``E_X``). The levels (the chapter's table; the paper's main-text equations were not read
verbatim, they are reconstructed from the official code):

* HALO-0: ``Y = Q(X) Q(W)ᵀ``, ``E_X = Q(E_Y) Q(W)``, ``G = Q(E_Y)ᵀ Q(X)``;
* HALO-1: ``Y = Q(XH) Q(WH)ᵀ``, ``E_X = [Q(E_Y) Q(WH)] Hᵀ``, ``G = [Q(E_Y)ᵀ Q(XH)] Hᵀ``;
* HALO-2: as HALO-1 with ``E_X = H_bᵀ [Q(H_b E_Y) Q(WH)] Hᵀ`` (left rotation over tokens);
* HQ-FSDP: rotate and quantize the weight shards *before* the all-gather, so ``Q(WH)``
  travels in 8 bits and feeds the products above directly.

Deviations from the paper
-------------------------
* Low precision is *simulated* on the CPU (exact integer / minifloat accumulation); real
  INT8/FP8 GEMMs run only on CUDA (``exact=False``).
* The Hadamard table covers ``K`` in {12, 20, 28, 36, 44, 60, 108, 140} (Paley), not HALO's
  52, 156 and 172 (Williamson).
* HALO-2's token rotation zero-pads the tokens to a Hadamard size and un-pads (exact).
* HQ-FSDP is re-implemented on plain ``torch.distributed`` (gloo on CPU), not FSDP; gradients
  are averaged in FP32 (HALO: BF16 reduce-scatter).
* The paper's Llama-3-8B experiments are replaced by a small MLP on digits with injected
  massive activations (fine-tuning) and trained from scratch (pre-training).
* Massive activations are injected, not grown: ``inject_massive_activations`` (``layer``)
  multiplies four entries of a fixed per-channel gain after the first nonlinearity
  (``ChannelGain``, as an RMSNorm gain) by ``S`` and folds the gain out of the next layer
  (its matching columns divided by ``S``); the weights keep their range. The classifier stays
  in full precision (HALO's ``wrap_model`` exceptions), and accuracy is evaluated in batches of
  the training batch size.
* The CPU parity run of the official ``qllmt`` code stubs its CUDA Hadamard kernel and GEMMs
  (``official``); its ``H_12`` (Sloane's table) differs from ours (Paley I), and its FP6
  codebook kernel breaks ties toward the lower entry where ours rounds to even.

Files
-----
============== =====================================================================
``hadamard``   ``hadamard_matrix`` and the supported orders (``split_size``,
               ``is_hadamard_size``, ``next_hadamard_size``)
``formats``    ``quantize``, ``QTensor``, ``fp_grid``, ``qmatmul`` (INT8, FP8, FP6, FP4;
               exact simulated GEMM)
``reference``  ``fwht`` (numpy butterflies), rotation placements (``rotated_matmul``),
               ``row_relative_error``, the three products of each level
               (``halo_products``)
``fast``       the same names on the fast paths: ``fwht`` (compiled C / torch;
               ``fwht_backend``; the C kernel in ``fwht_cpu``), ``qmatmul`` (CUDA INT8 /
               FP8 GEMMs), ``halo_products``; triton kernels ``fwht_triton``,
               ``fwht_quant_triton`` (CUDA)
``layer``      ``HaloConfig``, ``HaloLinear``, ``halo_linear``, ``LoRAHaloLinear``, ``halo_wrap``,
               ``ChannelGain``, ``inject_massive_activations``
``hqfsdp``     the 8-bit weight all-gather on ``torch.distributed`` with counted wire
               bytes (``quantized_allgather``, ``wire_log``, ``run_sharded_training``)
``official``   ``official_parity``: our kernels on the official-code fixture
``settings``   the experiments' frozen settings (``FinetuneSettings``, ``PretrainSettings``)
``models``     notebook 3's toy model and data (``digits_data``, ``pretrained_mlp``)
``experiments`` the notebooks' drivers (``outlier_tensors``, ``matmul_error_report``,
               ``error_case``, ``finetune``, ``seed_study``, ``pretrain``)
``batched``    notebook 3's fine-tuning vectorised over seeds (``finetune_seeds``,
               ``seed_study_batched``: the same runs, seed by seed)
``figures``    plotly figures for the widgets (results in, a figure out)
============== =====================================================================

See: book/halo/index.md
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
