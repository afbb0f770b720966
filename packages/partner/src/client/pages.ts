import {
  ChangePage as ChangePageMessage,
  isTranscriptData,
  parseTranscriptSentences,
  RecordingList,
} from '@earshot/protocol'
import type { AudioPage, ChangePage } from './client-types.js'
import { EarshotResponseError } from './errors.js'

/** A query's opened plaintext as a page of recordings, each transcript's sentences parsed. */
export function audioPageOf(plaintext: unknown, httpStatus: number): AudioPage {
  try {
    const list = RecordingList.parse(plaintext)
    return {
      specVersion: list.specVersion,
      page: list.page,
      size: list.size,
      total: list.total,
      items: list.items.map(({ audioId, data }) =>
        isTranscriptData(data)
          ? { audioId, data, sentences: parseTranscriptSentences(data.transcriptSentences) }
          : { audioId, data },
      ),
    }
  } catch (error) {
    throw new EarshotResponseError(
      `the query response data is not a page of recordings {specVersion, page, size, total, items}: ${(error as Error).message}`,
      httpStatus,
      { cause: error },
    )
  }
}

/** The change feed's opened plaintext as a page of changes, each transcript's sentences parsed. */
export function changePageOf(plaintext: unknown, httpStatus: number): ChangePage {
  try {
    const page = ChangePageMessage.parse(plaintext)
    return {
      specVersion: page.specVersion,
      items: page.items.map((item) =>
        item.data && isTranscriptData(item.data)
          ? { ...item, sentences: parseTranscriptSentences(item.data.transcriptSentences) }
          : item,
      ),
      nextCursor: page.nextCursor,
      hasMore: page.hasMore,
      lagSeconds: page.lagSeconds ?? 0,
    }
  } catch (error) {
    throw new EarshotResponseError(
      `the change feed response data is not a change feed page: ${(error as Error).message}`,
      httpStatus,
      { cause: error },
    )
  }
}
