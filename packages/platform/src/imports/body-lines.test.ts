import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type BodyLine, decodeUtf8Line, HEAD_BYTES, limitedBody, splitLines } from './body-lines.js'

/** The reading of a streamed JSON Lines body: a byte limit, lines of bytes, strict UTF-8. */

async function* chunksOf(...parts: (string | number[])[]): AsyncGenerator<Buffer> {
  for (const part of parts) yield typeof part === 'string' ? Buffer.from(part) : Buffer.from(part)
}

async function collect(lines: AsyncIterable<BodyLine>): Promise<[number, string | undefined][]> {
  const seen: [number, string | undefined][] = []
  for await (const { number, bytes } of lines) seen.push([number, bytes?.toString('utf8')])
  return seen
}

describe('body lines', { timeout: 30_000 }, () => {
  test('lines are numbered from 1, across chunk boundaries, without LF or a CR before it', async () => {
    const lines = splitLines(chunksOf('one\r\ntw', 'o\n', '\n', 'thr', 'ee\r', '\nfour'), 1024)
    assert.deepEqual(await collect(lines), [
      [1, 'one'],
      [2, 'two'],
      [3, ''],
      [4, 'three'],
      [5, 'four'],
    ])
    assert.deepEqual(await collect(splitLines(chunksOf('a\n'), 1024)), [[1, 'a']])
    assert.deepEqual(await collect(splitLines(chunksOf(), 1024)), [])
  })

  test('a line over the line limit is yielded without its bytes, and the next line is whole', async () => {
    const lines = splitLines(
      chunksOf('short\n', 'x'.repeat(6), 'x'.repeat(6), '\nnext\n', 'y'.repeat(11)),
      10,
    )
    assert.deepEqual(await collect(lines), [
      [1, 'short'],
      [2, undefined],
      [3, 'next'],
      [4, undefined],
    ])
  })

  test('a line over the limit keeps its first HEAD_BYTES (to tell what it is), across chunks', async () => {
    const seen: [number, string | undefined, string | undefined][] = []
    const long = `[{"a":${'1'.repeat(100)}}]`
    for await (const { number, bytes, head } of splitLines(
      chunksOf('ok\n', long.slice(0, 30), long.slice(30), '\n'),
      50,
    )) {
      seen.push([number, bytes?.toString(), head?.toString()])
    }
    assert.deepEqual(seen, [
      [1, 'ok', undefined],
      [2, undefined, long.slice(0, HEAD_BYTES)],
    ])
    assert.equal(HEAD_BYTES, 64)
  })

  test('a character split across chunks decodes whole; invalid UTF-8 is refused, never replaced', async () => {
    const euro = [...Buffer.from('€')]
    const lines = await collect(
      splitLines(chunksOf([0x61, ...euro.slice(0, 1)], [...euro.slice(1), 0x0a]), 64),
    )
    assert.deepEqual(lines, [[1, 'a€']])
    assert.equal(decodeUtf8Line(Buffer.from('café 日本 🎧')), 'café 日本 🎧')
    const invalid = [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xc0, 0xaf]]
    for (const bytes of invalid) {
      assert.throws(
        () => decodeUtf8Line(Buffer.from([0x7b, ...bytes, 0x7d])),
        (error: Error) => error.message === 'is not valid UTF-8',
        `bytes ${bytes.map((byte) => byte.toString(16)).join(' ')}`,
      )
    }
  })

  test('the byte limit passes a body of exactly the limit and refuses one byte more with 4130', async () => {
    const exactly = limitedBody(chunksOf('12345', '67890'), 10)
    let received = 0
    for await (const chunk of exactly) received += chunk.length
    assert.equal(received, 10)
    await assert.rejects(
      async () => {
        for await (const _ of limitedBody(chunksOf('12345', '678901'), 10));
      },
      (error: { code?: number; message: string }) =>
        error.code === 4130 && error.message === 'the body is over 10 bytes',
    )
  })
})
