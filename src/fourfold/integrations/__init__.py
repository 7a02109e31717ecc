"""fourfold inside the frameworks agents are built with; each adapter is thin and has its own extra.

- `fourfold.integrations.langgraph.FourfoldStore`: a LangGraph `BaseStore` (`fourfold[langgraph]`).
- `fourfold.integrations.openai_agents`: an OpenAI Agents SDK `Session` and recall / remember
  tools (`fourfold[openai-agents]`).
- `fourfold.integrations.langchain.FourfoldChatMessageHistory`: a LangChain
  `BaseChatMessageHistory` (`fourfold[langchain]`).

Importing this package imports no framework; importing an adapter without its framework raises
`MissingDependency` naming the extra to install.
"""

__all__: list[str] = []
