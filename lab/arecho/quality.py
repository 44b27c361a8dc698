"""Speech, degradations and quality metrics for the ARECHO chapter (numpy/scipy).

Everything here is the *data side* of the chapter: clean utterances (``espeak-ng`` or a
deterministic formant synthesiser), the degradations that make them worse (reverberation,
additive noise at a given SNR, band limitation, clipping), the log-mel segment statistics the
models read, and the real metric implementations that label the corpus (``pesq``, ``pystoi``,
SI-SNR, LSD, SNR).

Equations:

* (1) SI-SNR: ``s_t = (<e, r> / ||r||^2) r`` (zero-mean signals), ``SI-SNR = 10 log10(||s_t||^2 / ||e - s_t||^2)``;
* (2) SNR: ``10 log10(||r||^2 / ||e - r||^2)``;
* (3) LSD: ``mean_t sqrt(mean_f (10 log10 P_r(t, f) - 10 log10 P_e(t, f))^2)`` in dB;
* (4) room impulse response: ``h[0] = 1``, ``h[n] = g[n] exp(-3 ln(10) n / (T60 fs))`` for
  ``n >= 1`` with Gaussian ``g`` (a 60 dB energy decay after ``T60`` seconds);
* (5) additive noise: ``y = x + sigma w`` with ``sigma^2 = P_x / 10^(SNR/10)``.

See: book/arecho/01-degraded-speech-and-tokens.ipynb
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_choice, check_int, check_range
from lab.core.memo import memo

__all__ = [
    "SR",
    "espeak_available",
    "tts",
    "formant_speech",
    "synthetic_rir",
    "degrade",
    "si_snr",
    "snr",
    "lsd",
    "pesq_wb",
    "pesq_nb",
    "stoi",
    "logmel_features",
    "mu_law_encode",
    "mu_law_decode",
]

SR = 16000


# ----------------------------------------------------------------------------------------
# clean speech
# ----------------------------------------------------------------------------------------
def espeak_available() -> bool:
    """True when the ``espeak-ng`` binary is on ``PATH`` (and ``LAB_NO_ESPEAK`` is unset).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    if os.environ.get("LAB_NO_ESPEAK", "").strip() not in ("", "0"):
        return False
    return shutil.which("espeak-ng") is not None


def _trim_and_normalise(x: np.ndarray, peak: float = 0.9) -> np.ndarray:
    env = np.abs(x)
    thr = 0.02 * env.max() if env.max() > 0 else 0.0
    idx = np.nonzero(env > thr)[0]
    if idx.size:
        x = x[max(idx[0] - 160, 0) : idx[-1] + 160]
    m = np.abs(x).max()
    return x * (peak / m) if m > 0 else x


def tts(
    text: str, voice: str = "en", speed: int = 160, pitch: int = 50, sr: int = SR
) -> np.ndarray:
    """Render ``text`` with the ``espeak-ng`` text-to-speech engine.

    Parameters
    ----------
    text : str
        The sentence.
    voice : str
        An ``espeak-ng`` voice name, e.g. ``"en"``, ``"en-us+f3"``.
    speed : int
        Words per minute (80 to 450).
    pitch : int
        Pitch, 0 to 99.
    sr : int
        Output sample rate (8000 or 16000); ``espeak-ng`` renders at 22 050 Hz and the
        signal is resampled with a polyphase filter.

    Returns
    -------
    numpy.ndarray
        Float64 waveform, leading/trailing silence trimmed, peak 0.9.

    Raises
    ------
    RuntimeError
        If ``espeak-ng`` is not installed (use :func:`formant_speech` instead).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    from scipy.io import wavfile
    from scipy.signal import resample_poly

    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty string (got {text!r})")
    if not isinstance(voice, str) or not voice.replace("-", "").replace("+", "").isalnum():
        raise ValueError(f"voice must be an espeak-ng voice name like 'en-us+f3' (got {voice!r})")
    speed = check_int("speed", speed, 80, 450)
    pitch = check_int("pitch", pitch, 0, 99)
    sr = check_choice("sr", sr, (8000, 16000))
    if not espeak_available():
        raise RuntimeError("espeak-ng is not installed; use lab.arecho.formant_speech instead")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "u.wav")
        subprocess.run(
            ["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-w", path, text],
            check=True,
            capture_output=True,
            timeout=30,
        )
        rate, data = wavfile.read(path)
    x = data.astype(np.float64) / 32768.0
    g = np.gcd(int(rate), sr)
    x = resample_poly(x, sr // g, int(rate) // g)
    return _trim_and_normalise(x)


# vowel formants (F1, F2, F3) in Hz, Peterson & Barney style averages
_VOWELS = np.array(
    [
        [730, 1090, 2440],
        [270, 2290, 3010],
        [530, 1840, 2480],
        [660, 1720, 2410],
        [300, 870, 2240],
        [570, 840, 2410],
        [440, 1020, 2240],
        [490, 1350, 1690],
    ],
    dtype=np.float64,
)


def _resonator(x: np.ndarray, f: float, bw: float, sr: int) -> np.ndarray:
    from scipy.signal import lfilter

    r = np.exp(-np.pi * bw / sr)
    a = [1.0, -2.0 * r * np.cos(2 * np.pi * f / sr), r * r]
    return lfilter([1.0 - r], a, x)


def formant_speech(seed: int, duration: float = 2.0, sr: int = SR) -> np.ndarray:
    """Deterministic speech-like signal: the fallback when ``espeak-ng`` is missing.

    A glottal pulse train with a falling-rising F0 contour drives three formant resonators
    whose targets change every syllable (vowels); unvoiced syllables are band-passed noise
    bursts (fricatives); syllables are separated by short gaps. Same ``seed`` = same samples
    on every machine (numpy ``default_rng`` and scipy filters only).

    Parameters
    ----------
    seed : int
        Seed of the syllable sequence, F0 and timing.
    duration : float
        Length in seconds (0.5 to 10).
    sr : int
        8000 or 16000.

    Returns
    -------
    numpy.ndarray
        Float64 waveform of ``round(duration * sr)`` samples, peak 0.9.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    seed = check_int("seed", seed, 0, 2**32 - 1)
    duration = check_range("duration", duration, 0.5, 10.0)
    sr = check_choice("sr", sr, (8000, 16000))
    rng = np.random.default_rng(seed)
    n = int(round(duration * sr))
    t = np.arange(n) / sr
    f0_base = rng.uniform(95, 220)
    f0 = f0_base * (1 + 0.12 * np.sin(2 * np.pi * t / duration + rng.uniform(0, 6.28)))
    phase = np.cumsum(f0 / sr)
    pulses = np.diff(np.floor(phase), prepend=0.0)  # one impulse per glottal period
    glottal = np.convolve(pulses, np.hanning(int(0.004 * sr)) ** 2, mode="same")
    voiced = np.zeros(n)
    unvoiced = np.zeros(n)
    pos = int(0.05 * sr)
    while pos < n - int(0.1 * sr):
        length = int(rng.uniform(0.12, 0.25) * sr)
        end = min(pos + length, n)
        win = np.hanning(end - pos)
        if rng.uniform() < 0.75:  # vowel: three resonators
            fmt = _VOWELS[rng.integers(len(_VOWELS))] * rng.uniform(0.9, 1.15)
            seg = glottal[pos:end]
            out = sum(
                _resonator(seg, f, 60 + 0.06 * f, sr) * g
                for f, g in zip(fmt, (1.0, 0.6, 0.3), strict=True)
                if f < sr / 2 - 200
            )
            voiced[pos:end] += out * win
        else:  # fricative: high-passed noise burst
            fc = rng.uniform(2500, min(6000, sr / 2 - 500))
            seg = _resonator(rng.standard_normal(end - pos), fc, 1500, sr)
            unvoiced[pos:end] += 0.5 * seg * win
        pos = end + int(rng.uniform(0.02, 0.08) * sr)
    x = voiced / (np.abs(voiced).max() + 1e-12) + unvoiced / (np.abs(unvoiced).max() + 1e-12) * 0.3
    return x * (0.9 / np.abs(x).max())


# ----------------------------------------------------------------------------------------
# degradations
# ----------------------------------------------------------------------------------------
def synthetic_rir(t60: float, sr: int = SR, seed: int = 0) -> np.ndarray:
    """Exponentially decaying noise impulse response with a direct path at delay 0.

    Parameters
    ----------
    t60 : float
        Reverberation time in seconds (0 to 2); ``0`` gives the identity ``[1.0]``.
    sr : int
        Sample rate (8000 to 48000).
    seed : int
        Seed of the noise tail.

    Returns
    -------
    numpy.ndarray
        ``h`` with ``h[0] = 1`` (no delay, so intrusive metrics stay aligned), length
        ``T60 * fs`` samples.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    t60 = check_range("t60", t60, 0.0, 2.0)
    sr = check_int("sr", sr, 8000, 48000)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    if t60 == 0.0:
        return np.ones(1)
    rng = np.random.default_rng(seed)
    n = max(int(t60 * sr), 2)
    k = np.arange(n)
    h = rng.standard_normal(n) * np.exp(-3.0 * np.log(10.0) * k / (t60 * sr))  # eq. (4)
    h[: int(0.002 * sr)] = 0.0  # a 2 ms gap between direct path and the tail
    h *= 0.5 / np.sqrt(np.sum(h**2) + 1e-12) * np.sqrt(t60 / 0.4)
    h[0] = 1.0  # eq. (4): direct path, delay 0
    return h


def _colored_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    w = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n)
    tilt = rng.uniform(0.0, 1.0)  # 0 = white, 1 = pink (1/f power)
    w *= 1.0 / np.maximum(f, 1.0 / n) ** (tilt / 2)
    return np.fft.irfft(w, n)


def degrade(
    x: Any,
    snr_db: float,
    t60: float = 0.0,
    lowpass_hz: float = 8000.0,
    clip: float = 0.0,
    seed: int = 0,
    sr: int = SR,
) -> np.ndarray:
    """Degrade clean speech: reverberation, noise at an SNR, band limit, clipping.

    Order: ``y = clip(lowpass(x * h + noise))``. The impulse response has its direct path at
    delay 0 and the convolution is truncated to the input length; the low-pass filter is a
    zero-phase Butterworth (``sosfiltfilt``), so intrusive metrics stay aligned.

    Parameters
    ----------
    x : array_like
        Clean waveform (1-d, at least 0.25 s).
    snr_db : float
        Speech-to-noise ratio of the reverberant speech to the added noise, in dB
        (-20 to 80); the noise is coloured between white and pink, eq. (5).
    t60 : float
        Reverberation time in seconds (0 = none, up to 2).
    lowpass_hz : float
        Band limit in Hz (500 to ``sr / 2``; ``sr / 2`` = no filtering).
    clip : float
        Fraction of the peak removed by hard clipping, in ``[0, 0.95]``: the threshold is
        ``(1 - clip) max|y|``; ``0`` = no clipping. ``True``/``False`` mean 0.7/0.
    seed : int
        Seed of the noise and the impulse response.
    sr : int
        Sample rate (8000 or 16000).

    Returns
    -------
    numpy.ndarray
        Degraded float64 waveform of the same length, peak 0.9.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    from scipy.signal import butter, fftconvolve, sosfiltfilt

    sr = check_choice("sr", sr, (8000, 16000))
    x = check_array("x", x, ndim=1, min_size=int(0.25 * sr))
    if not np.any(x):
        raise ValueError("x must not be all zeros (silent input)")
    snr_db = check_range("snr_db", snr_db, -20.0, 80.0)
    t60 = check_range("t60", t60, 0.0, 2.0)
    lowpass_hz = check_range("lowpass_hz", lowpass_hz, 500.0, sr / 2)
    if isinstance(clip, bool | np.bool_):
        clip = 0.7 if clip else 0.0
    clip = check_range("clip", clip, 0.0, 0.95)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    rng = np.random.default_rng(seed)
    h = synthetic_rir(t60, sr, int(rng.integers(2**31)))
    y = fftconvolve(x, h)[: x.size] if h.size > 1 else x.copy()  # truncate: no delay
    noise = _colored_noise(x.size, rng)
    p_y = np.mean(y**2)
    noise *= np.sqrt(p_y / 10 ** (snr_db / 10) / np.mean(noise**2))  # eq. (5)
    y = y + noise
    if lowpass_hz < sr / 2:
        sos = butter(8, lowpass_hz, btype="low", fs=sr, output="sos")
        y = sosfiltfilt(sos, y)  # zero phase
    if clip > 0:
        thr = (1.0 - clip) * np.abs(y).max()
        y = np.clip(y, -thr, thr)
    return y * (0.9 / np.abs(y).max())


# ----------------------------------------------------------------------------------------
# metrics
# ----------------------------------------------------------------------------------------
def _pair(ref: Any, est: Any) -> tuple[np.ndarray, np.ndarray]:
    ref = check_array("ref", ref, ndim=1, min_size=2)
    est = check_array("est", est, ndim=1, min_size=2)
    if ref.shape != est.shape:
        raise ValueError(
            f"ref and est must have the same length (got {ref.size} and {est.size} samples)"
        )
    if not np.any(ref):
        raise ValueError("ref must not be all zeros (silent reference)")
    return ref, est


def si_snr(ref: Any, est: Any) -> float:
    """Scale-invariant signal-to-noise ratio of ``est`` against ``ref`` in dB, eq. (1).

    Invariant to scaling ``est`` by any non-zero constant (and to scaling ``ref``); identical
    signals give 300 dB (the error energy is floored at ``1e-30`` times the target's).

    Raises
    ------
    ValueError
        Different lengths, or an all-zero reference.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    ref, est = _pair(ref, est)
    ref = ref - ref.mean()
    est = est - est.mean()
    s_t = (est @ ref) / (ref @ ref) * ref  # eq. (1): projection on the reference
    e = est - s_t
    num = s_t @ s_t
    return float(10 * np.log10(num / max(e @ e, 1e-30 * num, np.finfo(np.float64).tiny)))


def snr(ref: Any, est: Any) -> float:
    """Plain signal-to-noise ratio ``10 log10(||r||^2 / ||e - r||^2)`` in dB, eq. (2).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    ref, est = _pair(ref, est)
    d = est - ref
    tiny = np.finfo(np.float64).tiny
    return float(10 * np.log10((ref @ ref + tiny) / (d @ d + tiny)))  # eq. (2)


def power_spec(x: np.ndarray, n_fft: int = 512, hop: int = 256) -> np.ndarray:
    n_frames = 1 + max(x.size - n_fft, 0) // hop
    idx = np.arange(n_fft)[None, :] + hop * np.arange(n_frames)[:, None]
    xp = np.pad(x, (0, max(n_fft - x.size, 0)))
    frames = xp[idx] * np.hanning(n_fft)
    return np.abs(np.fft.rfft(frames, axis=1)) ** 2


def lsd(ref: Any, est: Any) -> float:
    """Log-spectral distance in dB, eq. (3) (512-point frames, hop 256, both signals at
    unit RMS so that the distance measures spectral shape, not level).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    ref, est = _pair(ref, est)
    rms_e = np.sqrt(np.mean(est**2))
    if rms_e == 0:
        raise ValueError("est must not be all zeros")
    pr = power_spec(ref / np.sqrt(np.mean(ref**2)))
    pe = power_spec(est / rms_e)
    d = 10 * np.log10(pr + 1e-8) - 10 * np.log10(pe + 1e-8)
    return float(np.mean(np.sqrt(np.mean(d**2, axis=1))))  # eq. (3)


def _pesq(ref: Any, est: Any, sr: int, mode: str, utt_id: Any) -> float:
    import pesq as _p

    sr = check_int("sr", sr)
    if sr not in (8000, 16000):
        raise ValueError(f"sr must be 8000 or 16000 for PESQ (got {sr})")
    if mode == "wb" and sr != 16000:
        raise ValueError(f"wide-band PESQ needs sr = 16000 (got {sr})")
    ref, est = _pair(ref, est)
    if not np.any(est):
        raise ValueError(f"est must not be all zeros (utterance {utt_id!r})")
    if ref.size < sr // 4:
        raise ValueError(f"PESQ needs at least 0.25 s of audio (got {ref.size / sr:.3f} s)")
    try:
        return float(_p.pesq(sr, ref, est, mode))
    except _p.NoUtterancesError as exc:
        raise ValueError(f"PESQ found no utterances in utterance {utt_id!r}: {exc}") from None
    except _p.PesqError as exc:
        raise ValueError(f"PESQ failed on utterance {utt_id!r}: {exc}") from None


def pesq_wb(ref: Any, est: Any, sr: int = SR, utt_id: Any = None) -> float:
    """Wide-band PESQ (ITU-T P.862.2) through the ``pesq`` package; about 1.0 to 4.64.

    Raises
    ------
    ValueError
        ``sr`` other than 16000, different lengths, a silent reference, or PESQ's
        "no utterances" error (re-raised naming ``utt_id``).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    return _pesq(ref, est, sr, "wb", utt_id)


def pesq_nb(ref: Any, est: Any, sr: int = SR, utt_id: Any = None) -> float:
    """Narrow-band PESQ (ITU-T P.862) through the ``pesq`` package; about 1.0 to 4.55.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    return _pesq(ref, est, sr, "nb", utt_id)


def stoi(ref: Any, est: Any, sr: int = SR, extended: bool = False) -> float:
    """Short-time objective intelligibility through ``pystoi`` (0 to 1).

    Raises
    ------
    ValueError
        Different lengths, silent reference, or a clip too short for STOI (it needs about
        30 frames of speech after its silence removal).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    import warnings

    from pystoi import stoi as _stoi

    sr = check_int("sr", sr, 8000, 48000)
    ref, est = _pair(ref, est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(_stoi(ref, est, sr, extended=bool(extended)))
    if not np.isfinite(value) or value == 1e-5:
        raise ValueError(f"STOI is undefined for this clip (too short: {ref.size / sr:.2f} s)")
    return value


# ----------------------------------------------------------------------------------------
# features and storage helpers
# ----------------------------------------------------------------------------------------
@memo(maxsize=4)
def mel_bank(n_mels: int, n_fft: int, sr: int) -> np.ndarray:
    def hz2mel(f):
        return 2595 * np.log10(1 + f / 700)

    def mel2hz(m):
        return 700 * (10 ** (m / 2595) - 1)

    pts = mel2hz(np.linspace(hz2mel(50), hz2mel(sr / 2), n_mels + 2))
    freqs = np.fft.rfftfreq(n_fft, 1 / sr)
    bank = np.zeros((n_mels, freqs.size))
    for i in range(n_mels):
        lo, c, hi = pts[i], pts[i + 1], pts[i + 2]
        bank[i] = np.clip(np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)), 0, None)
    return bank


def logmel_features(x: Any, sr: int = SR, n_mels: int = 32, n_segments: int = 4) -> np.ndarray:
    """Per-segment statistics of the log-mel spectrogram: the models' input.

    The waveform is scaled to unit RMS, its 512-point power spectrogram (hop 256) is pooled
    into ``n_mels`` mel bands, the frames are split into ``n_segments`` equal segments, and
    the mean and standard deviation of every band in every segment are returned, ordered
    ``[segment, (mean | std), band]``.

    Returns
    -------
    numpy.ndarray
        Float32 vector of ``2 * n_mels * n_segments`` values.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    sr = check_choice("sr", sr, (8000, 16000))
    n_mels = check_int("n_mels", n_mels, 4, 128)
    n_segments = check_int("n_segments", n_segments, 1, 32)
    x = check_array("x", x, ndim=1, min_size=512 * n_segments)
    rms = np.sqrt(np.mean(x**2))
    if rms == 0:
        raise ValueError("x must not be all zeros")
    spec = power_spec(x / rms)
    mel = np.log10(spec @ mel_bank(n_mels, 512, sr).T + 1e-6)
    segs = np.array_split(mel, n_segments, axis=0)
    out = [np.concatenate([s.mean(0), s.std(0)]) for s in segs]
    return np.concatenate(out).astype(np.float32)


_MU = 255.0


def mu_law_encode(x: Any) -> np.ndarray:
    """8-bit mu-law code of a waveform in ``[-1, 1]`` (how the corpus stores clean speech).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    x = np.clip(check_array("x", x), -1.0, 1.0)
    y = np.sign(x) * np.log1p(_MU * np.abs(x)) / np.log1p(_MU)
    return np.round((y + 1) / 2 * _MU).astype(np.uint8)


def mu_law_decode(code: Any) -> np.ndarray:
    """Inverse of :func:`mu_law_encode` (float64 waveform in ``[-1, 1]``).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    code = check_array("code", code, dtype=None)
    if code.dtype != np.uint8:
        raise TypeError(f"code must be uint8 (got {code.dtype})")
    y = code.astype(np.float64) / _MU * 2 - 1
    return np.sign(y) * np.expm1(np.abs(y) * np.log1p(_MU)) / _MU
