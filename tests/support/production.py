"""Production replies as the companion's own Langfuse integration records them, for the monitor
tests (local and on Ray): a generation per reply, under a trace, linked to a prompt version.
"""

from __future__ import annotations

from langfuse import Langfuse, propagate_attributes

PROMPT = "penpal-companion"  # the Langfuse prompt the production replies were made with

CALM = [("I finally finished my pottery class today!", "That's wonderful! What did you make in the end?"),
        ("Work was long but fine.", "Long days add up. Did anything good happen in the middle of it?"),
        ("Any ideas for a rainy Sunday?", "A slow breakfast and a film you love? What sort of mood are you in?")]
# Replies with every heuristic metric at 0.5 or above: nothing triggers the judge for them.
ROUTINE = [("I'm going hiking with my sister tomorrow.", "How lovely! Hiking with your sister sounds like a great way "
            "to spend the day. Where are you two headed, somewhere with a view?"),
           ("My cat knocked over a plant again.", "Oh no, the classic cat move! Is the plant okay?")]
CRISIS = ("I feel like giving up on everything.", "Cheer up! Tomorrow is a new day!")
COMPLAINED = ("Can you remind me what we talked about?", "Sure! We talked about lots of things.")


def production_reply(app_client: Langfuse, user: str, reply: str, prompt_version: int) -> tuple[str, str]:
    """What the companion's own Langfuse integration records for one turn; (trace id, generation id)."""
    messages = [{"role": "system", "content": "You are Penpal, a warm voice companion."},
                {"role": "user", "content": user}]
    with app_client.start_as_current_observation(name="chat-turn", input=user) as root:
        with propagate_attributes(prompt={"name": PROMPT, "version": prompt_version}):
            generation = app_client.start_observation(name="companion-reply", as_type="generation",
                                                      model="gpt-4o-mini", input=messages,
                                                      output={"role": "assistant", "content": reply})
            generation.end()
        root.update(output=reply)
    return root.trace_id, generation.id
