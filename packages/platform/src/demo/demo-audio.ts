const SAMPLE_RATE = 8000
const SECONDS = 3
/** A pentatonic scale from A4, so that neighbouring samples sound different. */
const PITCHES = [440, 495, 556.875, 660, 742.5, 880]

/** Milliseconds of every demo recording's audio. */
export const DEMO_AUDIO_MS = SECONDS * 1000

/**
 * The audio of demo recording `i`, made here rather than downloaded: a three-second chime (8 kHz, 8-bit mono
 * WAV, 24 KB) of two notes, fading out, so that a newcomer's first link plays something.
 */
export function demoChime(i: number): Buffer {
  const samples = SAMPLE_RATE * SECONDS
  const first = PITCHES[i % PITCHES.length] as number
  const second = PITCHES[(i * 3 + 2) % PITCHES.length] as number
  return monoWav(SAMPLE_RATE, samples, (t) => {
    const pitch = t < SECONDS / 2 ? first : second
    const envelope = Math.min(1, t * 20) * Math.exp(-2 * (t % (SECONDS / 2)))
    return envelope * Math.sin(2 * Math.PI * pitch * t)
  })
}

/** An 8-bit mono PCM WAV file of `samples` samples, each `wave(t)` in -1..1 at t seconds (scaled to ±100). */
export function monoWav(sampleRate: number, samples: number, wave: (t: number) => number): Buffer {
  const wav = Buffer.alloc(44 + samples)
  writeHeader(wav, sampleRate, samples)
  for (let n = 0; n < samples; n++) wav[44 + n] = Math.round(128 + 100 * wave(n / sampleRate))
  return wav
}

function writeHeader(wav: Buffer, sampleRate: number, samples: number): void {
  wav.write('RIFF', 0, 'ascii')
  wav.writeUInt32LE(36 + samples, 4)
  wav.write('WAVEfmt ', 8, 'ascii')
  wav.writeUInt32LE(16, 16) // fmt chunk size
  wav.writeUInt16LE(1, 20) // PCM
  wav.writeUInt16LE(1, 22) // mono
  wav.writeUInt32LE(sampleRate, 24)
  wav.writeUInt32LE(sampleRate, 28) // bytes per second
  wav.writeUInt16LE(1, 32) // block align
  wav.writeUInt16LE(8, 34) // bits per sample
  wav.write('data', 36, 'ascii')
  wav.writeUInt32LE(samples, 40)
}
