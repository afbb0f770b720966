/** The import page: a JSON Lines file sent to the admin API, its progress and its refused lines. */
import { adminClient, enterpriseOptions, Refusal, unauthorized } from './admin-api.js'
import type { Enterprise, ImportLine } from './admin-client.js'
import { alertBox, count, enterpriseSelect, field, h, heading, showError, statusBox } from './dom.js'
import { may, notGranted } from './session.js'

/** The controls of the import form, and where its progress and outcome are shown. */
interface ImportForm {
  alert: HTMLElement
  enterprise: HTMLSelectElement
  file: HTMLInputElement
  progress: HTMLProgressElement
  progressText: HTMLElement
  progressBlock: HTMLElement
  status: HTMLElement
  problems: HTMLElement
  submit: HTMLButtonElement
}

export async function importPage(view: HTMLElement, params: URLSearchParams, current: () => boolean) {
  document.title = 'Import · Earshot console'
  const alert = alertBox()
  view.append(
    heading('Import recordings'),
    h(
      'p',
      {},
      'A JSON Lines file: one recording per line. Every line is checked before anything is stored; a refused file imports nothing and lists its bad lines. Importing the same file again completes an interrupted import and skips what is stored already.',
    ),
  )
  if (!may('recordings.write')) {
    view.append(notGranted('recordings.write', 'Importing recordings'))
    return
  }
  let list: Enterprise[] = []
  try {
    list = await enterpriseOptions()
  } catch (error) {
    if (current()) showError(alert, error)
  }
  const progressText = h('span', { id: 'import-progress-label' }, 'Import progress')
  const progress = h('progress', {
    id: 'import-progress',
    max: '1',
    'aria-labelledby': 'import-progress-label',
  })
  const ui: ImportForm = {
    alert,
    enterprise: enterpriseSelect(
      'import-enterprise',
      list.filter((e) => !e.disabled),
      params.get('enterpriseId'),
    ),
    file: h('input', {
      id: 'import-file',
      name: 'file',
      type: 'file',
      required: true,
      accept: '.jsonl,.ndjson,.json,application/x-ndjson,application/jsonl',
    }),
    progress,
    progressText,
    progressBlock: h('div', { class: 'progress', hidden: true }, progressText, progress),
    status: statusBox(),
    problems: h('ol', { class: 'problems', 'aria-label': 'Refused lines' }),
    submit: h('button', { type: 'submit', class: 'primary' }, 'Import'),
  }
  view.append(
    h(
      'form',
      { class: 'card', 'aria-label': 'Import a JSON Lines file', onsubmit: (event) => runImport(ui, event) },
      h(
        'div',
        { class: 'fields' },
        field('import-enterprise', 'Enterprise', ui.enterprise),
        field('import-file', 'JSON Lines file', ui.file),
      ),
      h('div', { class: 'actions' }, ui.submit),
    ),
    ui.progressBlock,
    ui.status,
    ui.alert,
    ui.problems,
  )
}

/** A refused file: the summary in the alert, each refused line in the list below it. */
function refuse(ui: ImportForm, failure: { code: number; msg: string }): void {
  // The refusal's first line says what happened; each bad line of the file is a line of its own after it.
  const [summary = '', ...lines] = failure.msg.split('\n')
  ui.alert.replaceChildren(
    summary.replace(/:$/, '.').replace(/^./, (c) => c.toUpperCase()),
    ' ',
    h('span', { class: 'code' }, `(${failure.code})`),
  )
  ui.problems.replaceChildren(...lines.map((line) => h('li', {}, line)))
}

async function runImport(ui: ImportForm, event: Event): Promise<void> {
  event.preventDefault()
  const chosen = ui.file.files?.[0]
  if (!chosen || !ui.enterprise.value) return
  ui.alert.replaceChildren()
  ui.status.replaceChildren()
  ui.problems.replaceChildren()
  ui.submit.disabled = true
  ui.progressBlock.hidden = false
  ui.progress.removeAttribute('value')
  ui.progressText.textContent = `Uploading and checking ${chosen.name}…`
  try {
    const lines = adminClient().importRecordings(Number(ui.enterprise.value), chosen)
    if (!(await followProgress(ui, lines))) {
      ui.alert.textContent = 'The import stopped before its end: import the same file again to complete it.'
    }
  } catch (error) {
    if (!(error instanceof Refusal)) showError(ui.alert, error)
    else {
      if (error.status === 401)
        unauthorized(`The admin API no longer accepts this tab's credentials: ${error.msg}`)
      ui.progressBlock.hidden = true
      refuse(ui, error)
    }
  } finally {
    ui.submit.disabled = false
  }
}

/** Shows the import's progress lines as they come; whether its last line (summary or refusal) came. */
async function followProgress(ui: ImportForm, lines: AsyncIterable<ImportLine>): Promise<boolean> {
  let finished = false
  for await (const line of lines) {
    if ('progress' in line) {
      ui.progress.max = Math.max(line.total, 1)
      ui.progress.value = line.progress
      ui.progressText.textContent = `Committed ${line.progress} of ${count(line.total, 'recording')}`
    } else if ('error' in line) {
      refuse(ui, line.error)
      finished = true
    } else if ('imported' in line) {
      ui.status.textContent = `Imported ${count(line.imported, 'recording')} into enterprise ${ui.enterprise.value}; skipped ${line.skipped} already imported.`
      finished = true
    }
  }
  return finished
}
