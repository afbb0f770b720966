import type { TSchema } from 'typebox'

/*
 * How a schema says, where it is declared, that the OpenAPI documents publish it as a component (once,
 * under components.schemas, and a $ref wherever it occurs) and what it is. The note is kept under a
 * symbol: JSON.stringify drops it, so neither the JSON Schema published (the documents, contract.json)
 * nor validation sees it.
 */

/** The key of a schema's ComponentNote; give it with component() among the schema's options. */
export const COMPONENT = Symbol('earshot.component')

export interface ComponentNote {
  /** Its name under components.schemas. */
  readonly name: string
  /** What it is: the component's description. */
  readonly description?: string
  /**
   * A plaintext that travels only as an envelope's ciphertext: the partner document marks it so
   * (SEALED_EXTENSION); the admin document, which answers such data in the clear, leaves it inline.
   */
  readonly sealed?: boolean
  /** On an envelope's schema: the plaintext its ciphertext holds (PLAINTEXT_EXTENSION). */
  readonly plaintext?: TSchema
}

/** A schema's options declaring it a component: `Type.Object({…}, component({ name: 'Delivery' }))`. */
export function component(note: ComponentNote): { [COMPONENT]: ComponentNote } {
  return { [COMPONENT]: note }
}

/** The component a schema declares itself, if any. */
export function componentOf(schema: unknown): ComponentNote | undefined {
  return typeof schema === 'object' && schema !== null
    ? (schema as { [COMPONENT]?: ComponentNote })[COMPONENT]
    : undefined
}

/** On a component: a plaintext, which travels only as an envelope's ciphertext (docs/protocol.md). */
export const SEALED_EXTENSION = 'x-earshot-sealed'
/** On an envelope's component: the component its ciphertext holds, once opened. */
export const PLAINTEXT_EXTENSION = 'x-earshot-plaintext'
