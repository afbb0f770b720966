/**
 * The erasures page (#/erasures, filtered by #/erasures?enterpriseId=N, one open with &erasureId=N):
 * erasure requests and retention runs, newest first; a new erasure asked first (erasure-form.ts, for roles
 * with erasures.write); the one open with its progress per endpoint and its report (erasure-detail.ts).
 * Read again every few seconds while one shown is still moving.
 */
import { api, enterpriseOptions } from './admin-api.js'
import type { AdminAnswer, Enterprise } from './admin-client.js'
import {
  alertBox,
  badge,
  cell,
  count,
  enterpriseSelect,
  field,
  h,
  heading,
  showError,
  stamp,
  statusBox,
  table,
} from './dom.js'
import { drawErasure, type ErasureDetail } from './erasure-detail.js'
import { erasureForm } from './erasure-form.js'
import { navigate, refreshLater } from './navigation.js'
import { may } from './session.js'

type ErasureSummary = AdminAnswer<'listErasures'>['erasures'][number]

const REFRESH_MS = 2000

const COLUMNS = [
  'ID',
  'Enterprise',
  'Kind',
  'State',
  'Recordings',
  'Subject',
  'Reason',
  'Requested',
  'By',
] as const

interface ErasuresPage {
  current: () => boolean
  enterpriseId: string | null
  openId: number | null
  alert: HTMLElement
  status: HTMLElement
  detail: HTMLElement
  listing: HTMLElement
  /** What was last drawn, so that a refresh redraws only what changed (and keeps the focus). */
  shown: { list: string; detail: string }
}

export async function erasures(view: HTMLElement, params: URLSearchParams, current: () => boolean) {
  document.title = 'Erasures · Earshot console'
  const opened = Number(params.get('erasureId'))
  const page: ErasuresPage = {
    current,
    enterpriseId: params.get('enterpriseId') || null,
    openId: Number.isInteger(opened) && opened > 0 ? opened : null,
    alert: alertBox(),
    status: statusBox(),
    detail: h('section', {
      id: 'erasure-detail',
      class: 'card erasure-detail',
      'aria-labelledby': 'erasure-heading',
      hidden: true,
    }),
    listing: h('div', { class: 'listing' }),
    shown: { list: '', detail: '' },
  }
  view.append(
    heading('Erasures'),
    h(
      'p',
      { class: 'muted' },
      'Recordings erased everywhere the platform keeps them, by an operator or by an enterprise’s retention policy: each deleted and pushed as deleted to every endpoint, its audio and kept copies removed, the partners asked to confirm they erased theirs.',
    ),
  )
  let list: Enterprise[] = []
  try {
    list = await enterpriseOptions()
  } catch (error) {
    showError(page.alert, error)
  }
  if (!current()) return
  if (may('erasures.write')) view.append(erasureForm(list, page.enterpriseId, requested(page)))
  view.append(filterForm(list, page.enterpriseId), page.status, page.alert, page.detail, page.listing)
  await load(page)
}

/** Once an erasure is requested: it opens, and the page's address names it. */
function requested(page: ErasuresPage) {
  return async (erasureId: number, recordings: number) => {
    page.openId = erasureId
    history.replaceState(null, '', `#/erasures?${addressOf(page.enterpriseId, erasureId)}`)
    page.status.textContent = `Erasure ${erasureId} requested: ${count(recordings, 'recording')}.`
    await load(page)
    document.getElementById('erasure-heading')?.focus()
  }
}

function addressOf(enterpriseId: string | null, erasureId?: number): URLSearchParams {
  const query = new URLSearchParams()
  if (enterpriseId) query.set('enterpriseId', enterpriseId)
  if (erasureId !== undefined) query.set('erasureId', String(erasureId))
  return query
}

function filterForm(list: readonly Enterprise[], selected: string | null): HTMLFormElement {
  const enterprise = enterpriseSelect('erasures-enterprise', list, selected, 'Every enterprise')
  return h(
    'form',
    {
      class: 'card filters',
      'aria-label': 'Filter erasures',
      onsubmit: (event) => {
        event.preventDefault()
        navigate(`#/erasures?${addressOf(enterprise.value || null)}`)
      },
    },
    h('div', { class: 'fields' }, field('erasures-enterprise', 'Enterprise', enterprise)),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Show')),
  )
}

/**
 * Lists the erasures and reads the open one (one that cannot be read, unknown or out of the role's scope,
 * is said so above the list); again in a moment while any of them still moves.
 */
async function load(page: ErasuresPage): Promise<void> {
  try {
    const query = page.enterpriseId ? { enterpriseId: page.enterpriseId } : {}
    const [{ erasures: found }, open] = await Promise.all([
      api('listErasures', { query }),
      page.openId === null
        ? undefined
        : api('showErasure', { params: { erasureId: page.openId } }).catch((error: Error) => error),
    ])
    if (!page.current()) return
    page.alert.replaceChildren()
    if (open instanceof Error) {
      page.openId = null
      showError(page.alert, open)
    }
    const detail = open instanceof Error ? undefined : open
    draw(page, found, detail)
    const moving = found.some((each) => each.state === 'running') || (detail && detail.state !== 'confirmed')
    if (moving) refreshLater(() => load(page), REFRESH_MS)
  } catch (error) {
    if (page.current()) showError(page.alert, error)
  }
}

function draw(page: ErasuresPage, found: readonly ErasureSummary[], open: ErasureDetail | undefined): void {
  const list = JSON.stringify(found)
  if (list !== page.shown.list) {
    page.shown.list = list
    page.listing.replaceChildren(erasureTable(page, found))
  }
  const detail = JSON.stringify(open ?? null)
  if (detail === page.shown.detail) return
  page.shown.detail = detail
  if (open) drawErasure(page.detail, open, `#/erasures?${addressOf(page.enterpriseId)}`)
  else page.detail.hidden = true
}

function erasureTable(page: ErasuresPage, found: readonly ErasureSummary[]): HTMLElement {
  if (found.length === 0) return h('p', {}, 'No erasure yet.')
  return table(
    'Erasures',
    COLUMNS,
    found.map((e) =>
      h(
        'tr',
        { id: `erasure-${e.erasureId}`, 'aria-current': e.erasureId === page.openId && 'true' },
        cell(
          COLUMNS[0],
          h(
            'a',
            { href: `#/erasures?${addressOf(page.enterpriseId, e.erasureId)}` },
            `Erasure ${e.erasureId}`,
          ),
        ),
        cell(COLUMNS[1], String(e.enterpriseId)),
        cell(COLUMNS[2], e.kind),
        cell(COLUMNS[3], badge(e.state)),
        cell(COLUMNS[4], String(e.recordings)),
        cell(
          COLUMNS[5],
          e.subjectHash
            ? h('span', { class: 'mono', title: e.subjectHash }, `${e.subjectHash.slice(0, 12)}…`)
            : '—',
        ),
        cell(COLUMNS[6], e.reason || '—'),
        cell(COLUMNS[7], stamp(e.requestedAt)),
        cell(COLUMNS[8], h('span', { class: 'mono' }, e.requestedBy.id)),
      ),
    ),
  )
}
